// i18n/: the zh_CN catalog checked against the sources it translates (every msgstr keeps its msgid's
// `{}` placeholders, every msgid is a string literal of the sources, none twice), gettext's precedence
// of LANGUAGE/LC_ALL/LC_MESSAGES/LANG, --lang's names, and messages translated by their ids.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "i18n/i18n.hpp"
#include "util/fs.hpp"

using namespace envfix;
namespace fs = std::filesystem;

namespace {

struct PoEntry {
  std::string msgid, msgstr;
  int line = 0;
};

// C-style escapes as PO and C++ write them (\" \\ \n \t).
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

std::string quoted(std::string_view line) {
  const auto a = line.find('"'), b = line.rfind('"');
  REQUIRE(a != std::string_view::npos);
  REQUIRE(b > a);
  return unescape(line.substr(a + 1, b - a - 1));
}

// The entries of a PO file (the header's empty msgid left out), in file order.
std::vector<PoEntry> read_po(const fs::path& p) {
  const auto text = util::read_file(p).value();
  std::vector<PoEntry> out;
  std::string* field = nullptr;
  int n = 0;
  std::size_t from = 0;
  while (from < text.size()) {
    auto to = text.find('\n', from);
    if (to == std::string::npos) to = text.size();
    const std::string_view line(text.data() + from, to - from);
    from = to + 1;
    ++n;
    if (line.starts_with("msgid ")) {
      out.push_back({quoted(line), {}, n});
      field = &out.back().msgid;
    } else if (line.starts_with("msgstr ")) {
      REQUIRE(!out.empty());
      out.back().msgstr = quoted(line);
      field = &out.back().msgstr;
    } else if (line.starts_with("\"")) {
      REQUIRE(field);
      *field += quoted(line);
    } else {
      field = nullptr;
    }
  }
  std::erase_if(out, [](const PoEntry& e) { return e.msgid.empty(); });
  return out;
}

// The string literals of a C++ file, adjacent ones joined as the compiler joins them; comments,
// character literals and raw strings skipped.
void literals_of(std::string_view t, std::set<std::string>& out) {
  std::string cur;
  bool open = false; // a literal seen, maybe continued by the next one
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (t.substr(i, 2) == "//") {
      i = t.find('\n', i);
      if (i == std::string_view::npos) break;
      continue;
    }
    if (t.substr(i, 2) == "/*") {
      i = t.find("*/", i + 2);
      if (i == std::string_view::npos) break;
      ++i;
      continue;
    }
    if (c == 'R' && i + 1 < t.size() && t[i + 1] == '"' && (i == 0 || !std::isalnum(static_cast<unsigned char>(t[i - 1])))) {
      const auto paren = t.find('(', i + 2);
      const std::string close = ")" + std::string(t.substr(i + 2, paren - i - 2)) + "\"";
      i = t.find(close, paren);
      if (i == std::string_view::npos) break;
      i += close.size() - 1;
      continue;
    }
    if (c == '\'' && (i == 0 || !std::isalnum(static_cast<unsigned char>(t[i - 1])))) {
      for (++i; i < t.size() && t[i] != '\''; ++i)
        if (t[i] == '\\') ++i;
      continue;
    }
    if (c == '"') {
      std::size_t j = i + 1;
      for (; j < t.size() && t[j] != '"'; ++j)
        if (t[j] == '\\') ++j;
      cur += unescape(t.substr(i + 1, j - i - 1));
      open = true;
      i = j;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (open) out.insert(cur);
    cur.clear();
    open = false;
  }
  if (open) out.insert(cur);
}

// Every literal of the product's sources: the modules (folders with a CMakeLists.txt) less tests,
// fuzz and bench.
std::set<std::string> source_literals() {
  std::set<std::string> out;
  const fs::path root = ENVFIX_SOURCE_DIR;
  for (const auto& d : fs::directory_iterator(root)) {
    const auto name = d.path().filename().string();
    if (!d.is_directory() || !fs::exists(d.path() / "CMakeLists.txt") || name == "tests" || name == "fuzz" || name == "bench" ||
        name == "build")
      continue;
    for (const auto& f : fs::recursive_directory_iterator(d.path())) {
      const auto ext = f.path().extension();
      if (ext == ".cpp" || ext == ".hpp") literals_of(util::read_file(f.path()).value(), out);
    }
  }
  return out;
}

// The placeholders of a format string in order: "{}" each; anything else in braces is named as is,
// so "{0}" or "{:<8}" against "{}" differs.
// The `{…}` fields of a format string; `{{` and `}}` are literal braces (fmt), not fields.
std::vector<std::string> placeholders(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.substr(i, 2) == "{{" || s.substr(i, 2) == "}}") {
      ++i;
      continue;
    }
    if (s[i] != '{') continue;
    const auto j = s.find('}', i);
    if (j == std::string_view::npos) break;
    out.emplace_back(s.substr(i, j - i + 1));
    i = j;
  }
  return out;
}

const fs::path kPo = fs::path(ENVFIX_SOURCE_DIR) / "i18n/zh_CN.po";

struct Lang {
  explicit Lang(i18n::Lang l) { i18n::set_language(l); }
  ~Lang() { i18n::set_language(i18n::Lang::en); }
  Lang(const Lang&) = delete;
  Lang& operator=(const Lang&) = delete;
};

} // namespace

TEST_SUITE("unit/i18n/i18n") {

  TEST_CASE("zh_CN.po: each msgstr has its msgid's placeholders, in order, and is Chinese") {
    const auto entries = read_po(kPo);
    REQUIRE(entries.size() > 50);
    for (const auto& e : entries) {
      INFO(kPo.string() << ":" << e.line << ": " << e.msgid);
      CHECK(!e.msgstr.empty());
      CHECK(placeholders(e.msgstr) == placeholders(e.msgid));
      for (const auto& p : placeholders(e.msgid)) CHECK(p == "{}"); // util::fill fills plain {} only
    }
  }

  TEST_CASE("zh_CN.po: no msgid twice, none unused by the sources") {
    const auto entries = read_po(kPo);
    std::map<std::string, int> first;
    for (const auto& e : entries) {
      INFO(kPo.string() << ":" << e.line << ": " << e.msgid);
      CHECK_MESSAGE(first.emplace(e.msgid, e.line).second, "duplicate of line " << first[e.msgid]);
    }
    const auto lits = source_literals();
    REQUIRE(lits.count("1. Hardware and base environment")); // the scan works
    for (const auto& e : entries) {
      INFO(kPo.string() << ":" << e.line);
      CHECK_MESSAGE(lits.count(e.msgid), "msgid is no string literal of the sources: " << e.msgid);
    }
  }

  TEST_CASE("the compiled table is the .po: every entry, sorted, each looked up") {
    const auto entries = read_po(kPo);
    const auto table = i18n::catalog(i18n::Lang::zh_CN);
    CHECK(table.size() == entries.size());
    for (std::size_t i = 1; i < table.size(); ++i) CHECK(table[i - 1].msgid < table[i].msgid);
    Lang zh(i18n::Lang::zh_CN);
    for (const auto& e : entries) CHECK(i18n::tr(e.msgid) == e.msgstr);
    CHECK(i18n::tr("no such sentence") == "no such sentence");
    CHECK(i18n::catalog(i18n::Lang::en).empty());
  }

  TEST_CASE("tr and trf: English by default, the catalog's sentence in zh_CN") {
    CHECK(i18n::tr("verdict:") == "verdict:");
    CHECK(i18n::trf("2. Framework {}", "torch") == "2. Framework torch");
    Lang zh(i18n::Lang::zh_CN);
    CHECK(i18n::tr("verdict:") == "结论：");
    CHECK(i18n::trf("2. Framework {}", "torch") == "2. 框架 torch");
    CHECK(i18n::trf("{} from {}", "cu126", "envfix.lock") == "cu126（来自 envfix.lock）");
  }

  // Fails when a message is translated by matching its English against the catalog's patterns
  // (issue 56: a reworded sentence must be a missing id, never a silent match), or when a nested
  // message is not translated by its own id.
  TEST_CASE("tr(Message): by id, nested messages by theirs; a text without an id is looked up whole") {
    const auto nested = util::msg("{} has no build for {} {}", "torchaudio", "torch", "2.17.0");
    const auto m =
        util::msg("{}: the fix installs {} {} without it (an installed {} is removed)", nested, "torch", "2.17.0", "torchaudio");
    CHECK(i18n::tr(m) == m.text);
    Lang zh(i18n::Lang::zh_CN);
    const auto zh_text = i18n::tr(m);
    CHECK(zh_text != m.text);
    CHECK(zh_text.find("torchaudio") != std::string::npos);
    CHECK(zh_text.find("has no build") == std::string::npos); // the nested message by its own id
    // The same English made without an id is no entry of the catalog: it stays as it is.
    Error plain{ErrorCode::unsatisfiable, m.text, {}, {}};
    CHECK(i18n::tr_error_text(plain, plain.message) == m.text);
    // An id the catalog lacks: its English, with the arguments still translated by theirs.
    const auto unknown = util::msg("no such sentence: {}", util::msg("no GPU"));
    CHECK(i18n::tr(unknown) == "no such sentence: 无 GPU");
  }

  TEST_CASE("gettext's precedence: LANGUAGE unless the locale is C, then LC_ALL, LC_MESSAGES, LANG") {
    using i18n::Lang;
    auto detect = [](std::map<std::string, std::string> vars) {
      return i18n::detect_language([&vars](util::Env k) -> std::optional<std::string> {
        auto it = vars.find(std::string(util::env_name(k)));
        return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
      });
    };
    CHECK(detect({}) == Lang::en);
    CHECK(detect({{"LANG", "zh_CN.UTF-8"}}) == Lang::zh_CN);
    CHECK(detect({{"LANG", "zh_CN.UTF-8"}, {"LC_MESSAGES", "en_US.UTF-8"}}) == Lang::en);
    CHECK(detect({{"LANG", "en_US.UTF-8"}, {"LC_MESSAGES", "zh_CN.UTF-8"}}) == Lang::zh_CN);
    CHECK(detect({{"LC_MESSAGES", "zh_CN.UTF-8"}, {"LC_ALL", "C"}}) == Lang::en);
    CHECK(detect({{"LC_ALL", "zh_CN.GB18030"}, {"LANG", "C"}}) == Lang::zh_CN);
    CHECK(detect({{"LANG", "en_US.UTF-8"}, {"LANGUAGE", "fr:zh_CN:en"}}) == Lang::zh_CN);
    CHECK(detect({{"LANG", "zh_CN.UTF-8"}, {"LANGUAGE", "en"}}) == Lang::en);
    CHECK(detect({{"LANG", "C.UTF-8"}, {"LANGUAGE", "zh_CN"}}) == Lang::en); // LANGUAGE ignored under C
    CHECK(detect({{"LANGUAGE", "zh_CN"}}) == Lang::en);                      // no locale is C
    CHECK(detect({{"LANG", "zh_TW.UTF-8"}}) == Lang::en);                    // no Traditional catalog
    CHECK(detect({{"LANG", "de_DE.UTF-8"}, {"LANGUAGE", "de:fr"}}) == Lang::en);
    CHECK(detect({{"LC_ALL", ""}, {"LANG", "zh_CN.UTF-8"}}) == Lang::zh_CN); // empty is unset
  }

  TEST_CASE("the terminal's character set: LC_ALL, LC_CTYPE, LANG; human text converted, UTF-8 untouched (issue 60, 8)") {
    auto codeset = [](std::map<std::string, std::string> vars) {
      return i18n::terminal_codeset([&vars](util::Env k) -> std::optional<std::string> {
        auto it = vars.find(std::string(util::env_name(k)));
        return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
      });
    };
    CHECK(codeset({}) == "UTF-8");
    CHECK(codeset({{"LANG", "zh_CN.UTF-8"}}) == "UTF-8");
    CHECK(codeset({{"LANG", "zh_CN.utf8"}}) == "UTF-8");
    CHECK(codeset({{"LANG", "zh_CN.GB18030"}}) == "GB18030");
    CHECK(codeset({{"LANG", "zh_CN.gbk"}}) == "GBK");
    CHECK(codeset({{"LANG", "zh_CN.GB18030@pinyin"}}) == "GB18030");
    CHECK(codeset({{"LANG", "zh_CN.GB18030"}, {"LC_CTYPE", "zh_CN.UTF-8"}}) == "UTF-8");
    CHECK(codeset({{"LC_CTYPE", "zh_CN.UTF-8"}, {"LC_ALL", "zh_CN.GB18030"}}) == "GB18030");
    CHECK(codeset({{"LANG", "C"}}) == "UTF-8");
    CHECK(codeset({{"LC_ALL", ""}, {"LANG", "zh_CN.GB18030"}}) == "GB18030"); // empty is unset

    i18n::set_terminal_codeset("GB18030");
    CHECK(i18n::for_terminal("错误: x") == "\xb4\xed\xce\xf3: x"); // GB18030 bytes, as Python's codec writes them
    CHECK(i18n::for_terminal("plain ASCII") == "plain ASCII");
    i18n::set_terminal_codeset("ASCII");
    CHECK(i18n::for_terminal("错误 x") == "?? x"); // what the terminal cannot show
    i18n::set_terminal_codeset("NO-SUCH-CODESET");
    CHECK(i18n::for_terminal("错误") == "错误"); // unknown to iconv: left as it is
    i18n::set_terminal_codeset("UTF-8");
    CHECK(i18n::for_terminal("错误") == "错误");
  }

  TEST_CASE("--lang's names") {
    using i18n::Lang;
    CHECK(i18n::parse_lang("en") == Lang::en);
    CHECK(i18n::parse_lang("zh_CN") == Lang::zh_CN);
    CHECK(i18n::parse_lang("zh-CN") == Lang::zh_CN);
    CHECK(i18n::parse_lang("zh_CN.UTF-8") == Lang::zh_CN);
    CHECK(i18n::parse_lang("zh") == Lang::zh_CN);
    CHECK(i18n::parse_lang("C") == Lang::en);
    CHECK(!i18n::parse_lang("xx"));
    CHECK(!i18n::parse_lang("zh_TW"));
    CHECK(!i18n::parse_lang(""));
    CHECK(i18n::available_languages() == "en, zh_CN");
    CHECK(i18n::to_string(Lang::zh_CN) == "zh_CN");
  }

  TEST_CASE("display width: CJK takes two cells, pad counts cells") {
    CHECK(i18n::display_width("driver") == 6);
    CHECK(i18n::display_width("驱动") == 4);
    CHECK(i18n::display_width("（x）") == 5);
    CHECK(i18n::pad("驱动", 8) == "驱动    ");
    CHECK(i18n::pad("platform", 8) == "platform");
    CHECK(i18n::pad("toolong!!", 8) == "toolong!!");
  }

} // TEST_SUITE unit
