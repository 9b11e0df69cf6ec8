#pragma once
// The language of envfix's human output (docs/architecture.md, Modules; docs/zh-CN/guide.md): English
// is the source text, other languages come from a catalog compiled into the binary (i18n/zh_CN.po,
// turned into a table at build time by i18n/po2cpp.py), so the relocatable bundle needs no .mo files.
// JSON output never goes through here: it stays English.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "util/env.hpp"
#include "util/error.hpp"
#include "util/message.hpp"

namespace envfix::i18n {

enum class Lang { en, zh_CN };

[[nodiscard]] std::string_view to_string(Lang l); // "en", "zh_CN"
// "en, zh_CN": what --lang accepts, for its error's hint.
[[nodiscard]] std::string_view available_languages();

// A language name or a locale: "en", "zh_CN", "zh_CN.UTF-8", "zh-CN", "zh", "en_US.UTF-8", "C", "POSIX";
// nullopt for a language there is no catalog for (zh_TW, de_DE, xx).
[[nodiscard]] std::optional<Lang> parse_lang(std::string_view name);

// gettext's precedence: the locale is the first set of LC_ALL, LC_MESSAGES, LANG; unless it is C or
// POSIX (or unset), the first known entry of LANGUAGE (a colon list) wins, else the locale's language.
// Anything unknown is English.
using EnvLookup = std::function<std::optional<std::string>(util::Env)>;
[[nodiscard]] Lang detect_language(const EnvLookup& env);
[[nodiscard]] Lang detect_language(); // from the process environment (util/env.hpp)

void set_language(Lang l);
[[nodiscard]] Lang language();

// The character set the terminal reads: the codeset of the first set of LC_ALL, LC_CTYPE, LANG
// ("zh_CN.GB18030" → "GB18030"; "zh_CN.gbk" → "GBK"); "UTF-8" when it names none or names UTF-8, and
// for C and POSIX (the catalog's text is UTF-8; ASCII stays ASCII). The locale need not be installed.
[[nodiscard]] std::string terminal_codeset(const EnvLookup& env);
[[nodiscard]] std::string terminal_codeset(); // from the process environment
void set_terminal_codeset(std::string codeset);
// Human output in the terminal's character set (iconv; a character it lacks becomes '?'); unchanged
// for UTF-8 or when iconv does not know the codeset. JSON never passes through it (RFC 8259: UTF-8).
[[nodiscard]] std::string for_terminal(std::string_view utf8);

// The translation of a whole English text (a msgid of the catalog), or the English itself.
[[nodiscard]] std::string_view tr(std::string_view english);
// The same as a string (CLI11's descriptions, lines built with +).
[[nodiscard]] inline std::string trs(std::string_view english) { return std::string(tr(english)); }

// A message in the chosen language by its id (util/message.hpp): the catalog's translation of the
// id, filled with each argument in the chosen language (a plain value stays as it is); the English as
// made when the catalog has no entry or its translation does not take the arguments.
[[nodiscard]] std::string tr(const util::Message& m);
// An error's text (its message, a cause or its hint) by the id it was made with (Error::said_as);
// one made without an id is looked up whole, never matched against the catalog's patterns.
[[nodiscard]] std::string tr_error_text(const Error& e, std::string_view text);

// fmt::format with a translated format string: the translation keeps the English's `{}` placeholders in
// the same order (tests/i18n checks the catalog), so the same arguments fill it. A translation fmt
// rejects falls back to the English.
template <class... T>
[[nodiscard]] std::string trf(fmt::format_string<T...> english, T&&... args) {
  const fmt::string_view en = english; // fmt 9: the conversion (fmt 10 adds get())
  const auto fmt_args = fmt::make_format_args(args...);
  try {
    const auto t = tr({en.data(), en.size()});
    return fmt::vformat(fmt::string_view(t.data(), t.size()), fmt_args);
  } catch (const fmt::format_error&) {
    return fmt::vformat(en, fmt_args);
  }
}

// Columns of translated text: the terminal cells of a UTF-8 text (East Asian wide characters take two)
// and the text padded with spaces to `width` cells.
[[nodiscard]] std::size_t display_width(std::string_view utf8);
[[nodiscard]] std::string pad(std::string_view utf8, std::size_t width);

// One catalog row; the table of a language, sorted by msgid (empty for English).
struct Entry {
  std::string_view msgid;
  std::string_view msgstr;
};
[[nodiscard]] std::span<const Entry> catalog(Lang l);

} // namespace envfix::i18n
