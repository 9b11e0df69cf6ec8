// The rest of the CLI in zh_CN (issue 33 item 10, i18n/zh_CN.po): a framework plan's whole transcript
// in Chinese against its golden (the English one is tests/fixtures/golden/framework-plan.txt, from
// tests/apply/test_golden.cpp), its JSON still the English document, and the help of envfix and of
// each command in Chinese, with --lang en (or --lang=en) giving back the English.
#include <regex>

#include <doctest/doctest.h>

#include <fmt/format.h>

#include "tests/apply/apply_world.hpp"
#include "tests/support/golden.hpp"

namespace cli_lang_test {

using namespace envfix;
namespace fs = std::filesystem;
using namespace envfix::apply_test;

namespace {

// The environment of a zh_CN user; the other locale variables set empty, which counts as unset
// (i18n/i18n.hpp), so the machine's own locale cannot pick another language.
std::map<std::string, std::string> zh_env() {
  return {{"NO_COLOR", "1"}, {"LANG", "zh_CN.UTF-8"}, {"LC_ALL", ""}, {"LC_MESSAGES", ""}, {"LANGUAGE", ""}};
}
std::map<std::string, std::string> en_env() {
  return {{"NO_COLOR", "1"}, {"LANG", "C.UTF-8"}, {"LC_ALL", ""}, {"LC_MESSAGES", ""}, {"LANGUAGE", ""}};
}

// `envfix ARGS` with the test's environment: each as "$ envfix ARGS", stderr, stdout, exit code.
struct Transcript {
  World& w;
  std::map<std::string, std::string> env;
  std::string text = {};
  std::string output = {}; // the same less the command lines
  Run step(const std::vector<std::string>& args) {
    auto r = w.envfix(args, env);
    std::string cmd = "$ envfix";
    for (const auto& a : args) cmd += " " + a;
    output += r.err + r.out + fmt::format("[exit {}]\n\n", r.rc);
    text += cmd + "\n" + r.err + r.out + fmt::format("[exit {}]\n\n", r.rc);
    return r;
  }
  std::string filter(const std::string& t) const {
    return testing::filter_transcript(t, {{w.index_url(), "<index>"}, {w.base_url(), "<https>"}, {w.root().string(), "<root>"}});
  }
  std::string filtered() const { return filter(text); }
  std::string filtered_output() const { return filter(output); }
};

// The plan commands of the English golden "framework-plan", in `env`'s language.
Transcript plan_transcript(World& w, const std::string& py, std::map<std::string, std::string> env,
                           std::vector<std::string> extra = {}) {
  const std::string pt = w.base_url() + "/pt/whl/cu126";
  Transcript t{w, std::move(env)};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  CHECK(t.step(with({"plan", "torch", "--index-url", pt, "--gpu", "sm_90", "--driver", "580.65.06", "--python", py})).rc == 0);
  CHECK(t.step(with({"plan", "torch", "--index-url", pt, "--gpu", "sm_120", "--driver", "580.65.06", "--python", py})).rc == 1);
  CHECK(t.step(with({"plan", "torch", "--index-url", pt, "--gpu", "sm_90", "--driver", "470.42.01", "--python", py})).rc == 1);
  return t;
}

bool has_cjk(std::string_view line) {
  // UTF-8 lead bytes 0xE3-0xE9 start U+3000-U+9FFF: CJK punctuation and the unified ideographs.
  for (unsigned char c : line)
    if (c >= 0xE3 && c <= 0xE9) return true;
  return false;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from < text.size()) {
    auto to = text.find('\n', from);
    if (to == std::string::npos) to = text.size();
    out.push_back(text.substr(from, to - from));
    from = to + 1;
  }
  return out;
}

// A help line that is only an option's or positional's name (with its type, CLI11 puts a long one's
// description on the next line): one column, no description after it.
bool name_only(std::string_view line) {
  const auto first = line.find_first_not_of(' ');
  if (first == std::string_view::npos) return true;
  const auto rest = line.substr(first);
  // A command line of a help's examples is what the user types, not a sentence to translate.
  if (rest.starts_with("envfix ")) return true;
  return rest.find("  ") == std::string_view::npos && (rest.starts_with("-") || rest.find(' ') == std::string_view::npos);
}

// The lines of a help text that say something in English: neither a CJK character nor a name only.
std::vector<std::string> english_lines(const std::string& help) {
  std::vector<std::string> out;
  for (const auto& l : lines_of(help))
    if (!has_cjk(l) && !name_only(l)) out.push_back(l);
  return out;
}

util::SubprocessResult run_help(std::vector<std::string> args, std::map<std::string, std::string> env) {
  args.insert(args.begin(), testing::envfix_bin().string());
  util::SubprocessOptions o;
  o.set_env = std::move(env);
  auto r = util::run_process(args, o);
  REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
  return *r;
}

} // namespace

TEST_SUITE("cli/cli/lang") {

  // A zh_CN terminal in GB18030 (issue 60, 8): the human text in that character set, not UTF-8 bytes
  // it would show as mojibake; the JSON document stays UTF-8 (RFC 8259).
  TEST_CASE("zh_CN.GB18030: errors reach the terminal in GB18030; JSON stays UTF-8") {
    auto env = zh_env();
    env["LANG"] = "zh_CN.GB18030";
    auto r = run_help({"inspect", "/nonexistent/libx.so"}, env);
    CHECK(r.exit_code == 1);
    INFO(r.err);
    CHECK(r.err.find("\xb4\xed\xce\xf3: ") != std::string::npos); // 错误 in GB18030
    CHECK(r.err.find("错误") == std::string::npos);
    CHECK(r.err.find("/nonexistent/libx.so") != std::string::npos);
    auto j = run_help({"inspect", "/nonexistent/libx.so", "--format", "json", "--gpu", "RTX 5090"}, env);
    CHECK(j.exit_code == 1);
    CHECK(nlohmann::json::parse(j.out)["files"][0]["error"].get<std::string>().find("/nonexistent/libx.so") != std::string::npos);
    // The same in UTF-8 for a UTF-8 locale.
    CHECK(run_help({"inspect", "/nonexistent/libx.so"}, zh_env()).err.find("错误: ") != std::string::npos);
  }

  // Fails when a line of plan's text falls back to English (the host line, "chose:", the choice and
  // its kernel claim, the download line, the refusals' messages and causes), when the JSON document is
  // translated, or when --lang en does not give back the English transcript byte for byte.
  TEST_CASE("plan golden: a framework plan and its refusals in zh_CN; JSON stays English; --lang en") {
    World w(kTorchCu126Index);
    const auto py = (w.venv("venv") / "bin/python").string();
    const auto zh = plan_transcript(w, py, zh_env());
    const auto diff = testing::golden_mismatch(fs::path(ENVFIX_FIXTURES_DIR) / "golden/framework-plan.zh_CN.txt", zh.filtered());
    CHECK_MESSAGE(diff.empty(), diff);
    CHECK(zh.text.find("选择：") != std::string::npos);
    CHECK(zh.text.find("chose:") == std::string::npos);
    CHECK(zh.text.find("Would download") == std::string::npos);
    CHECK(zh.text.find("caused by") == std::string::npos);
    for (const auto& l : testing::english_sentences(zh.filtered())) CHECK_MESSAGE(false, "English left: " << l);

    const auto en = plan_transcript(w, py, en_env());
    CHECK(en.text.find("chose: torch 2.7.0+cu126 from the stable channel") != std::string::npos);
    CHECK(plan_transcript(w, py, zh_env(), {"--lang", "en"}).filtered_output() == en.filtered_output());
    CHECK(plan_transcript(w, py, en_env(), {"--lang=zh_CN"}).filtered_output() == zh.filtered_output());

    // --format json: the same document in both languages (docs/json.md: JSON is never translated).
    const std::vector<std::string> args{
        "--format", "json",   "plan",     "torch",     "--index-url", w.base_url() + "/pt/whl/cu126",
        "--gpu",    "sm_120", "--driver", "580.65.06", "--python",    py};
    const auto zj = w.envfix(args, zh_env()), ej = w.envfix(args, en_env());
    CHECK(zj.rc == 1);
    CHECK(zj.out == ej.out);
    CHECK(zj.out.find("no GPU build of torch covers sm_120") != std::string::npos);
    CHECK(!has_cjk(zj.out));
    CHECK(has_cjk(zj.err)); // the human error on stderr is Chinese
  }

  // Fails when a CLI11 label, a group, a subcommand's or an option's description stays English under
  // LANG=zh_CN, or when --lang en / --lang=en (read before the app is built) leaves any Chinese.
  TEST_CASE("help in zh_CN: envfix --help and every command's --help, and --lang en restores English") {
    const std::vector<std::vector<std::string>> helps{
        {"--help"},           {"plan", "--help"},     {"apply", "--help"},  {"verify", "--help"},
        {"matrix", "--help"}, {"inspect", "--help"},  {"doctor", "--help"}, {"lock", "--help"},
        {"export", "--help"}, {"rollback", "--help"}, {"cache", "--help"},  {"recover", "--help"}};
    for (const auto& args : helps) {
      CAPTURE(args.front());
      const auto zh = run_help(args, zh_env());
      REQUIRE(zh.exit_code == 0);
      CHECK(has_cjk(zh.out));
      CHECK_MESSAGE(english_lines(zh.out).empty(), "untranslated lines:\n"
                                                       << fmt::format("{}", fmt::join(english_lines(zh.out), "\n")));
      for (const auto& lang : {std::vector<std::string>{"--lang", "en"}, std::vector<std::string>{"--lang=en"}}) {
        auto en_args = args;
        en_args.insert(en_args.begin(), lang.begin(), lang.end());
        const auto en = run_help(en_args, zh_env());
        CHECK(en.exit_code == 0);
        CHECK(!has_cjk(en.out));
        CHECK(en.out == run_help(args, en_env()).out);
      }
    }
    const auto top = run_help({"--help"}, zh_env()).out;
    CHECK(top.find("用法:") != std::string::npos);
    CHECK(top.find("解析并显示安装计划；不做任何修改") != std::string::npos); // plan's line in the subcommand list
    CHECK(top.find("Resolve and show the plan") == std::string::npos);
    const auto plan = run_help({"plan", "--help"}, zh_env()).out;
    CHECK(plan.find("列出每个被拒绝的候选及其原因代码") != std::string::npos);
    CHECK(plan.find("--explain") != std::string::npos); // option names stay
    CHECK(run_help({"--lang", "zh_CN", "plan", "--help"}, en_env()).out == plan);
    // The checks above can fail: English help has lines english_lines() reports.
    CHECK(!english_lines(run_help({"plan", "--help"}, en_env()).out).empty());
  }

} // TEST_SUITE

} // namespace cli_lang_test
