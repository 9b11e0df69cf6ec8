#include "i18n/i18n.hpp"

#include <iconv.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <vector>

#include "i18n/catalog.hpp"
#include "util/env.hpp"
#include "util/strings.hpp"

namespace envfix::i18n {

namespace {

std::atomic<Lang> g_lang{Lang::en};

// "zh_CN.UTF-8@x" → language "zh", territory "CN" (lower / upper case), no charset or modifier.
struct Locale {
  std::string language, territory;
};

Locale split_locale(std::string_view name) {
  name = name.substr(0, name.find_first_of(".@"));
  const auto sep = name.find_first_of("_-");
  Locale l{util::lower(name.substr(0, sep)), {}};
  if (sep != std::string_view::npos)
    for (char c : name.substr(sep + 1)) l.territory += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  return l;
}

bool is_c_locale(std::string_view locale) {
  const auto base = locale.substr(0, locale.find('.'));
  return locale.empty() || base == "C" || locale == "POSIX";
}

} // namespace

std::string_view to_string(Lang l) { return l == Lang::zh_CN ? "zh_CN" : "en"; }

std::string_view available_languages() { return "en, zh_CN"; }

std::optional<Lang> parse_lang(std::string_view name) {
  if (is_c_locale(name) && !name.empty()) return Lang::en;
  const auto l = split_locale(name);
  if (l.language == "en") return Lang::en;
  // Simplified Chinese: China and Singapore; zh_TW/zh_HK write Traditional, which has no catalog.
  if (l.language == "zh" && (l.territory.empty() || l.territory == "CN" || l.territory == "SG" || l.territory == "HANS"))
    return Lang::zh_CN;
  return std::nullopt;
}

Lang detect_language(const EnvLookup& env) {
  std::string locale;
  for (const auto var : {util::Env::lc_all, util::Env::lc_messages, util::Env::lang})
    if (auto v = env(var); v && !v->empty()) {
      locale = *v;
      break;
    }
  if (is_c_locale(locale)) return Lang::en;
  if (auto list = env(util::Env::language); list && !list->empty())
    for (const auto& entry : util::split(*list, ':'))
      if (auto l = parse_lang(entry)) return *l;
  return parse_lang(locale).value_or(Lang::en);
}

Lang detect_language() {
  return detect_language([](util::Env var) { return util::get_env(var); });
}

void set_language(Lang l) { g_lang.store(l, std::memory_order_relaxed); }

Lang language() { return g_lang.load(std::memory_order_relaxed); }

std::string terminal_codeset(const EnvLookup& env) {
  std::string locale;
  for (const auto var : {util::Env::lc_all, util::Env::lc_ctype, util::Env::lang})
    if (auto v = env(var); v && !v->empty()) {
      locale = *v;
      break;
    }
  auto dot = locale.find('.');
  if (dot == std::string::npos) return "UTF-8";
  std::string codeset = locale.substr(dot + 1, locale.find('@', dot) - dot - 1);
  const std::string lower = util::lower(codeset);
  if (codeset.empty() || lower == "utf-8" || lower == "utf8") return "UTF-8";
  for (auto& c : codeset) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return codeset;
}

std::string terminal_codeset() {
  return terminal_codeset([](util::Env var) { return util::get_env(var); });
}

namespace {
std::mutex g_codeset_mu;
std::string g_codeset = "UTF-8";
} // namespace

void set_terminal_codeset(std::string codeset) {
  std::lock_guard lock(g_codeset_mu);
  g_codeset = std::move(codeset);
}

std::string for_terminal(std::string_view utf8) {
  std::string codeset;
  {
    std::lock_guard lock(g_codeset_mu);
    codeset = g_codeset;
  }
  if (codeset == "UTF-8" || utf8.empty() ||
      std::all_of(utf8.begin(), utf8.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return std::string(utf8);
  iconv_t cd = ::iconv_open(codeset.c_str(), "UTF-8");
  if (cd == reinterpret_cast<iconv_t>(-1)) return std::string(utf8); // a codeset iconv does not know
  std::string out;
  std::string buf(4 * utf8.size() + 16, '\0');
  char* in = const_cast<char*>(utf8.data());
  std::size_t in_left = utf8.size();
  while (in_left > 0) {
    char* o = buf.data();
    std::size_t o_left = buf.size();
    const std::size_t r = ::iconv(cd, &in, &in_left, &o, &o_left);
    out.append(buf.data(), buf.size() - o_left);
    if (r == static_cast<std::size_t>(-1) && (errno == EILSEQ || errno == EINVAL)) {
      // Not representable (or not UTF-8): one '?' for the character, then on.
      out.push_back('?');
      std::size_t skip = 1;
      while (skip < in_left && (static_cast<unsigned char>(in[skip]) & 0xC0) == 0x80) ++skip;
      in += skip;
      in_left -= skip;
    } else if (r == static_cast<std::size_t>(-1) && errno != E2BIG) {
      break;
    }
  }
  ::iconv_close(cd);
  return out;
}

std::span<const Entry> catalog(Lang l) {
  if (l == Lang::zh_CN) return {detail::kZhCN, detail::kZhCNSize};
  return {};
}

std::string_view tr(std::string_view english) {
  const auto table = catalog(language());
  auto it =
      std::lower_bound(table.begin(), table.end(), english, [](const Entry& e, std::string_view key) { return e.msgid < key; });
  return it != table.end() && it->msgid == english ? it->msgstr : english;
}

std::string tr(const util::Message& m) {
  if (m.id.empty() || language() == Lang::en) return m.text;
  const auto t = tr(std::string_view(m.id));
  std::vector<std::string> args;
  for (const auto& a : m.args) args.push_back(tr(a));
  return util::fill(t, args).value_or(m.text);
}

std::string tr_error_text(const Error& e, std::string_view text) {
  if (const auto* m = e.said_as(text)) return tr(*m);
  return std::string(tr(text)); // a text made without an id: the catalog's entry for exactly it, or the text
}

std::size_t display_width(std::string_view s) {
  std::size_t cells = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    char32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
    for (std::size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    const bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
                      (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                      (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x20000 && cp <= 0x3FFFD);
    cells += wide ? 2 : 1;
    i += len;
  }
  return cells;
}

std::string pad(std::string_view s, std::size_t width) {
  std::string out(s);
  for (auto w = display_width(s); w < width; ++w) out += ' ';
  return out;
}

} // namespace envfix::i18n
