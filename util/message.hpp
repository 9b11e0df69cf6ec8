#pragma once
// A user-facing text as it was made: the English format string, which is its id (the catalog's
// msgid, i18n/zh_CN.po), and the arguments that fill it, each a value or a message of its own. The
// language is chosen where the text is shown (i18n::tr(const util::Message&)), by id, never by
// matching the English sentence back; a reworded sentence is a new id, which tests/i18n finds missing
// from the catalog instead of falling back to English silently.
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace envfix::util {

struct Message {
  std::string id;            // the English format string with {} placeholders; "" for a plain value
  std::vector<Message> args; // what fills the placeholders, in order
  std::string text;          // the English as made (a plain value: the value, shown as it is)

  [[nodiscard]] bool empty() const { return text.empty(); }
  bool operator==(const Message&) const = default;
};

// A value shown as it is in every language (a name, a version, a path, a command).
[[nodiscard]] inline Message plain(std::string v) { return Message{{}, {}, std::move(v)}; }

// Values shown as they are (names, URLs, reasons read from data).
[[nodiscard]] inline std::vector<Message> plains(const std::vector<std::string>& values) {
  std::vector<Message> out;
  out.reserve(values.size());
  for (const auto& v : values) out.push_back(plain(v));
  return out;
}

// The English of each message, for JSON (which stays English).
[[nodiscard]] inline std::vector<std::string> texts(const std::vector<Message>& ms) {
  std::vector<std::string> out;
  out.reserve(ms.size());
  for (const auto& m : ms) out.push_back(m.text);
  return out;
}

} // namespace envfix::util

template <>
struct fmt::formatter<envfix::util::Message> : fmt::formatter<std::string_view> {
  auto format(const envfix::util::Message& m, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(m.text, ctx);
  }
};

namespace envfix::util {

namespace detail {
template <class T>
Message arg(const T& v) {
  if constexpr (std::is_same_v<T, Message>)
    return v;
  else
    return plain(fmt::format("{}", v));
}
} // namespace detail

// msg("{} has no build for {} {}", companion, main, version): checked at compile time like
// fmt::format; a Message argument nests (it is translated by its own id).
template <class... Args>
[[nodiscard]] Message msg(fmt::format_string<Args...> f, Args&&... args) {
  const fmt::string_view s = f;
  Message m{std::string(s.data(), s.size()), {detail::arg(args)...}, {}};
  m.text = fmt::format(f, std::forward<Args>(args)...);
  return m;
}

// `format` (a translated id) filled with rendered arguments; nullopt when it does not take them
// (a placeholder with a type's format spec, a translation that lost one).
[[nodiscard]] std::optional<std::string> fill(std::string_view format, const std::vector<std::string>& args);

} // namespace envfix::util
