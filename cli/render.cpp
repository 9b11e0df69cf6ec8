#include "cli/render.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <optional>
#include <string_view>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "api/apply.hpp"
#include "cli/globals.hpp"
#include "i18n/i18n.hpp"
#include "util/env.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

namespace envfix::cli {

namespace {
bool g_color = false;
bool g_quiet = false;
bool g_json = false;
} // namespace

void init_output(const Globals& g) {
  g_quiet = g.quiet;
  g_json = g.format == "json";
  if (g.color == "always")
    g_color = true;
  else if (g.color == "never")
    g_color = false;
  else
    g_color = !util::get_env(util::Env::no_color) && ::isatty(STDERR_FILENO);
}

int init_language(const Globals& g) {
  if (g.lang.empty()) {
    i18n::set_language(i18n::detect_language());
    return 0;
  }
  auto l = i18n::parse_lang(g.lang);
  if (!l) {
    // The error itself in the environment's language: the one asked for is not there.
    i18n::set_language(i18n::detect_language());
    return fail(Error::made(ErrorCode::invalid_input, util::msg("--lang: unknown language '{}'", g.lang), {},
                            util::msg("available languages: {}", i18n::available_languages())));
  }
  i18n::set_language(*l);
  return 0;
}

void preset_language(int argc, const char* const* argv) {
  auto lang = i18n::detect_language();
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    std::optional<std::string_view> v;
    if (a == "--lang" && i + 1 < argc)
      v = argv[i + 1];
    else if (a.starts_with("--lang="))
      v = a.substr(7);
    if (auto l = v ? i18n::parse_lang(*v) : std::nullopt) lang = *l;
  }
  i18n::set_language(lang);
  i18n::set_terminal_codeset(i18n::terminal_codeset());
}

bool color_enabled() { return g_color; }

std::string styled(std::string_view text, Style s) {
  if (!g_color || s == Style::plain) return std::string(text);
  const char* code = "";
  switch (s) {
  case Style::bold: code = "1"; break;
  case Style::dim: code = "2"; break;
  case Style::red: code = "1;31"; break;
  case Style::green: code = "32"; break;
  case Style::yellow: code = "33"; break;
  case Style::blue: code = "34"; break;
  case Style::cyan: code = "36"; break;
  case Style::plain: break;
  }
  return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
}

// Everything printed for people goes through here: text from outside (member names, page text,
// subprocess output, package metadata) cannot drive the terminal. Our own colours pass.
void human(std::string_view raw) {
  if (g_quiet) return;
  const std::string text = i18n::for_terminal(util::escape_control(raw, true, true));
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fputc('\n', stderr);
}

namespace {
// Indented; bytes that are not UTF-8 (an argument, a path) become U+FFFD instead of an exception.
std::string json_text(const nlohmann::json& doc) { return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }
} // namespace

void machine_json(const nlohmann::json& doc) { machine(json_text(doc)); }

void machine(std::string_view json_text) {
  std::fwrite(json_text.data(), 1, json_text.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void warn(const util::Message& m) {
  std::string line = i18n::for_terminal(styled(i18n::tr("warning"), Style::yellow) + ": " +
                                        util::escape_control(i18n::tr(m), true, true) + "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

namespace {

// What to do about the errors the OS reports (the errno a failed system call left in the Error,
// util/error.hpp): a full disk, a file-size limit, a read-only filesystem, a file even root may not change.
std::string os_hint(const Error& e) {
  auto t = [](std::string_view english) { return std::string(i18n::tr(english)); };
  auto has = [&e](int err) { return e.sys_errno == err; };
  if (has(ENOSPC) || has(EDQUOT))
    return t("disk full: free space on the filesystem of the file named above (the environment, the cache, or "
             "TMPDIR) and run the same command again");
  if (has(EFBIG))
    return t("file too large: a file-size limit (`ulimit -f`) or the filesystem refused it; raise the limit and "
             "run the same command again");
  if (has(EROFS)) return t("that file is on a read-only filesystem (or mount); remount it read-write first");
  if (has(EXDEV))
    return t("that file is on another mount than the environment (a bind mount inside it?); envfix moves files "
             "by rename within one filesystem: unmount it first");
  if (has(EPERM) && ::geteuid() == 0)
    return t("even root may not change that file: check `lsattr` for the immutable (i) or append-only (a) "
             "attribute and clear it with `chattr -i`/`chattr -a`");
  return {};
}

} // namespace

void print_error(const Error& e) {
  // Human text in the chosen language (i18n/): the prefixes, and the messages the catalog knows; the
  // JSON error document below stays English.
  auto esc = [&e](std::string_view t) { return util::escape_control(i18n::tr_error_text(e, t)); };
  std::string out = styled(i18n::tr("error"), Style::red) + ": " + esc(e.message) + "\n";
  for (const auto& c : e.causes) out += "  " + styled(i18n::tr("caused by"), Style::red) + ": " + esc(c) + "\n";
  auto hint = e.hint.empty() ? os_hint(e) : e.hint;
  if (!hint.empty()) out += styled(i18n::tr("hint"), Style::cyan) + ": " + esc(hint) + "\n";
  out = i18n::for_terminal(out);
  std::fwrite(out.data(), 1, out.size(), stderr);
}

std::string error_json(const Error& e) {
  // Causes stay a list: the derivation chain is the message.
  return json_text(
      nlohmann::json{{"error", {{"code", to_string(e.code)}, {"message", e.message}, {"causes", e.causes}, {"hint", e.hint}}}});
}

int fail(const Error& e) {
  print_error(e);
  if (g_json) machine(error_json(e));
  return exit_code_for(e);
}

int finish_command(const Expected<int>& rc) { return rc ? *rc : fail(rc.error()); }

int exit_code_for(const Error& e) {
  switch (e.code) {
  case ErrorCode::invalid_input:
  case ErrorCode::not_found:
  case ErrorCode::unsatisfiable: return 1;
  case ErrorCode::rollback_failed: return 3;
  // Rolled back after SIGINT/SIGTERM: the shell's convention for "killed by signal N", 128 + N.
  case ErrorCode::interrupted: {
    // The transaction's handler (apply), or util::InterruptScope's (verify's children).
    const int sig = api::interrupt_signal();
    return 128 + (sig ? sig : SIGINT);
  }
  default: return 2;
  }
}

} // namespace envfix::cli
