#pragma once
// The one error type of envfix. Every fallible function returns Expected<T>; nothing throws across
// a module boundary. cli/ renders an Error as `error: …`, `  caused by: …`, `hint: …`.
#include <expected>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "util/message.hpp"

namespace envfix {

// Stable categories; cli/ maps them to exit codes (docs/architecture.md, JSON and exit codes).
enum class ErrorCode {
  invalid_input,   // bad user input, malformed file/page/wheel: exit 1, environment unchanged
  not_found,       // a file, package or target that does not exist: exit 1
  unsatisfiable,   // no set satisfies the request / no build for this GPU: exit 1
  io,              // file system failure: exit 2
  network,         // HTTP/TLS/connection failure: exit 2
  hash_mismatch,   // downloaded or staged bytes differ from the expected hash: exit 2
  subprocess,      // a child process failed or timed out: exit 2
  interrupted,     // SIGINT/SIGTERM: exit 2 after rollback
  rollback_failed, // rollback incomplete: exit 3
  internal,        // a bug: exit 2
};

const char* to_string(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;             // what failed, naming the input (file:line, URL, package)
  std::vector<std::string> causes; // outermost first: "caused by: …"
  std::string hint;                // what the user can do about it; may be empty
  // The errno of the system call that failed, where one did: lets callers (cli's OS hints) classify
  // by value instead of by searching the message. Kept through context().
  std::optional<int> sys_errno = std::nullopt;
  // How the message, causes and hint were made where they carry an id (util/message.hpp): each text
  // is shown in the user's language by its id (cli/ through i18n::tr); one composed without an id
  // has none here. Kept through context().
  std::vector<util::Message> said = {};

  // An error whose message, causes and hint each carry their id.
  [[nodiscard]] static Error made(ErrorCode code, util::Message message, const std::vector<util::Message>& causes = {},
                                  util::Message hint = {}) {
    Error e{code, {}, {}, {}};
    e.say(std::move(message));
    for (const auto& c : causes) e.add_cause(c);
    if (!hint.empty()) e.advise(std::move(hint));
    return e;
  }

  // Wrap with context: the new message goes on top, the old one becomes the first cause.
  [[nodiscard]] Error context(std::string outer) && {
    causes.insert(causes.begin(), std::move(message));
    message = std::move(outer);
    return std::move(*this);
  }
  [[nodiscard]] Error with_hint(std::string h) && {
    hint = std::move(h);
    return std::move(*this);
  }
  [[nodiscard]] Error context(util::Message outer) && {
    auto text = outer.text;
    said.push_back(std::move(outer));
    return std::move(*this).context(std::move(text));
  }
  [[nodiscard]] Error with_hint(util::Message h) && {
    hint = h.text;
    said.push_back(std::move(h));
    return std::move(*this);
  }
  // The message, one more cause, the hint: each with its id.
  void say(util::Message m) {
    message = m.text;
    said.push_back(std::move(m));
  }
  void add_cause(util::Message m) {
    causes.push_back(m.text);
    said.push_back(std::move(m));
  }
  void advise(util::Message m) {
    hint = m.text;
    said.push_back(std::move(m));
  }
  // How `text` (the message, a cause or the hint) was made, when it carries an id.
  [[nodiscard]] const util::Message* said_as(std::string_view text) const {
    for (const auto& m : said)
      if (m.text == text) return &m;
    return nullptr;
  }
  // The message (the hint) as a Message: with its id where it was made with one, else as a plain value.
  [[nodiscard]] util::Message said_message() const { return said_or_plain(message); }
  [[nodiscard]] util::Message said_hint() const { return said_or_plain(hint); }
  [[nodiscard]] util::Message said_or_plain(const std::string& text) const {
    if (const auto* m = said_as(text)) return *m;
    return util::plain(text);
  }
  // Multi-line rendering without colour (cli/ adds colour); used by tests and logs.
  [[nodiscard]] std::string render() const;
};

template <class T>
using Expected = std::expected<T, Error>;

// An error on its way out with a hint added: return with_hint(fail(...), "try …").
[[nodiscard]] inline std::unexpected<Error> with_hint(std::unexpected<Error> e, std::string hint) {
  e.error().hint = std::move(hint);
  return e;
}

[[nodiscard]] inline std::unexpected<Error> with_hint(std::unexpected<Error> e, util::Message hint) {
  e.error().advise(std::move(hint));
  return e;
}

[[nodiscard]] inline std::unexpected<Error> make_error(ErrorCode code, std::string message, std::string hint = {}) {
  return std::unexpected<Error>(Error{code, std::move(message), {}, std::move(hint)});
}

// The same error carrying the errno of the failed system call.
[[nodiscard]] inline std::unexpected<Error> with_errno(std::unexpected<Error> e, int err) {
  e.error().sys_errno = err;
  return e;
}

// An error whose message (and hint) carry their ids.
[[nodiscard]] inline std::unexpected<Error> make_error(ErrorCode code, util::Message message, util::Message hint = {}) {
  return std::unexpected<Error>(Error::made(code, std::move(message), {}, std::move(hint)));
}

template <class... Args>
[[nodiscard]] std::unexpected<Error> fail(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return make_error(code, util::msg(f, std::forward<Args>(args)...));
}

// fail() for a failed system call: the error keeps `err` (the call's errno) as data. Pass errno
// itself as the first argument; the format arguments usually include std::strerror(err).
template <class... Args>
[[nodiscard]] std::unexpected<Error> fail_errno(int err, ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return with_errno(make_error(code, util::msg(f, std::forward<Args>(args)...)), err);
}

// Propagate an error out of a function returning Expected<U>:
//   auto v = ENVFIX_TRY(parse(x));
#define ENVFIX_TRY(expr)                                                                                                         \
  __extension__({                                                                                                                \
    auto&& envfix_try_result_ = (expr);                                                                                          \
    if (!envfix_try_result_) return std::unexpected(std::move(envfix_try_result_).error());                                      \
    std::move(*envfix_try_result_);                                                                                              \
  })

// The same for Expected<void>: ENVFIX_TRY_VOID(write_file(...));
#define ENVFIX_TRY_VOID(expr)                                                                                                    \
  do {                                                                                                                           \
    if (auto envfix_try_void_ = (expr); !envfix_try_void_) return std::unexpected(std::move(envfix_try_void_).error());          \
  } while (0)

} // namespace envfix
