// Issue 36 (2): shell completions for bash, zsh and fish and the man page, generated from the CLI
// definition (cli/completions.cpp) and installed by the install target. Each is run by its real
// shell (bash's compgen, fish's `complete -C`, zsh's parser) and groff, and checked against every
// option each command's --help lists, so an option added without reaching them fails here.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "tests/support/envfix_bin.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

// Its own namespace: test_contract.cpp has a run() of its own in the same unity batch.
namespace cli_completions_test {

using namespace envfix;
namespace fs = std::filesystem;

namespace {

util::SubprocessResult run(std::vector<std::string> argv, const fs::path& cwd = {}) {
  util::SubprocessOptions o;
  o.timeout = std::chrono::seconds(300);
  if (!cwd.empty()) o.cwd = cwd;
  o.set_env = {{"LC_ALL", "C"}};
  o.unset_env = {"LANGUAGE"};
  auto r = util::run_process(argv, o);
  REQUIRE(r);
  return *r;
}

std::string generate(const std::vector<std::string>& what) {
  std::vector<std::string> argv{testing::envfix_bin().string()};
  argv.insert(argv.end(), what.begin(), what.end());
  auto r = run(argv);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return r.out;
}

// The commands `envfix --help` lists, and every long option each command's --help shows.
std::map<std::string, std::set<std::string>> options_by_command() {
  const std::string top = generate({"--help"});
  std::map<std::string, std::set<std::string>> out;
  // An option's line starts with its names: "  -r,--requirement TEXT ..." (CLI11's help layout).
  static const std::regex command(R"(\n  ([a-z]+)  )"), option(R"(\n\s+(?:-[a-zA-Z],)?(--[a-z][a-z0-9-]*))");
  for (auto it = std::sregex_iterator(top.begin(), top.end(), command); it != std::sregex_iterator(); ++it) {
    const std::string help = generate({(*it)[1].str(), "--help"});
    auto& opts = out[(*it)[1].str()];
    for (auto o = std::sregex_iterator(help.begin(), help.end(), option); o != std::sregex_iterator(); ++o)
      if ((*o)[1].str() != "--help" && (*o)[1].str() != "--help-all") opts.insert((*o)[1].str());
  }
  return out;
}

bool has_program(const std::string& name) { return util::find_in_path(name).has_value(); }

} // namespace

TEST_SUITE("cli/cli/completions") {

  TEST_CASE("issue 36: bash, zsh and fish completions and the man page carry every command and option --help lists") {
    const auto expected = options_by_command();
    REQUIRE(expected.size() >= 10); // doctor … cache
    REQUIRE(expected.at("apply").contains("--require-hashes"));
    const auto bash = generate({"completions", "bash"}), zsh = generate({"completions", "zsh"}),
               fish = generate({"completions", "fish"}), man = generate({"man"});
    for (const auto& [cmd, opts] : expected) {
      CAPTURE(cmd);
      CHECK(bash.find(cmd) != std::string::npos);
      CHECK(zsh.find("'" + cmd + ":") != std::string::npos);
      CHECK(fish.find("-a " + cmd + " ") != std::string::npos);
      CHECK(man.find(".B " + cmd + "\n") != std::string::npos);
      for (const auto& o : opts) {
        CAPTURE(o);
        CHECK(bash.find(" " + o) != std::string::npos);
        CHECK(zsh.find("'" + o + "[") != std::string::npos);
        CHECK(fish.find("-l " + o.substr(2)) != std::string::npos);
        std::string roff;
        for (char c : o) roff += c == '-' ? std::string("\\-") : std::string(1, c);
        CHECK(man.find("\\fB" + roff + "\\fR") != std::string::npos);
      }
    }
  }

  TEST_CASE("issue 36: each completion works in its shell; the man page renders") {
    const auto dir = util::make_temp_dir({}, "envfix-completions").value();
    util::write_file_atomic(dir / "envfix.bash", generate({"completions", "bash"})).value();
    util::write_file_atomic(dir / "_envfix", generate({"completions", "zsh"})).value();
    util::write_file_atomic(dir / "envfix.fish", generate({"completions", "fish"})).value();
    util::write_file_atomic(dir / "envfix.1", generate({"man"})).value();
    util::write_file_atomic(dir / "requirements.txt", "numpy\n").value();

    // bash: what compgen offers for a command, an option, a value with choices, a file.
    auto complete = [&](const std::string& words, int cword) {
      auto r = run({"bash", "-c",
                    "source ./envfix.bash; COMP_WORDS=(" + words + "); COMP_CWORD=" + std::to_string(cword) +
                        "; _envfix; printf '%s\\n' \"${COMPREPLY[@]}\""},
                   dir);
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      return r.out;
    };
    CHECK(complete("envfix pl", 1) == "plan\n");
    const auto no = complete("envfix apply --no-", 2);
    CHECK(no.find("--no-verify\n") != std::string::npos);
    CHECK(no.find("--no-config\n") != std::string::npos); // a global option, after the command too
    CHECK(no.find("--no-repro") == std::string::npos);    // doctor's, not apply's
    CHECK(complete("envfix --format ''", 2) == "text\njson\n");
    CHECK(complete("envfix cache ''", 2) == "dir\nsize\nclean\n");
    CHECK(complete("envfix plan -r req", 3) == "requirements.txt\n");

    if (has_program("fish")) {
      auto r = run({"fish", "-c", "source ./envfix.fish; complete -C 'envfix pl'; complete -C 'envfix apply --require-h'"}, dir);
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      CHECK(r.out.starts_with("plan\t"));
      CHECK(r.out.find("--require-hashes\t") != std::string::npos);
    } else {
      MESSAGE("fish is not installed (scripts/install-deps.sh installs it): its completion was not run");
    }
    if (has_program("zsh")) {
      auto r = run({"zsh", "-n", "_envfix"}, dir);
      CHECK_MESSAGE(r.exit_code == 0, r.err);
    } else {
      MESSAGE("zsh is not installed (scripts/install-deps.sh installs it): its completion was not parsed");
    }
    if (has_program("groff")) {
      auto r = run({"groff", "-man", "-Tutf8", "-ww", "envfix.1"}, dir);
      CHECK(r.exit_code == 0);
      // grotty overstrikes bold text (X, backspace, X): read it as the plain text.
      std::string text;
      for (char c : r.out)
        if (c == '\b' && !text.empty())
          text.pop_back();
        else
          text += c;
      CHECK(text.find("ENVFIX_NO_CONFIG") != std::string::npos); // hyphens render as U+2010: a name without one
      // groff's only warnings may be about lines it cannot adjust (a long option value in a table cell).
      for (const auto& line : util::split(r.err, '\n')) CHECK_MESSAGE(line.find("cannot adjust") != std::string::npos, line);
    } else {
      MESSAGE("groff is not installed (scripts/install-deps.sh installs it): the man page was not rendered");
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  TEST_CASE("issue 36: the install target installs the completions and the man page") {
    const auto prefix = util::make_temp_dir({}, "envfix-install").value();
    auto r = run({"cmake", "--install", ENVFIX_BINARY_DIR, "--prefix", prefix.string()});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    for (const auto* f : {"share/bash-completion/completions/envfix", "share/zsh/site-functions/_envfix",
                          "share/fish/vendor_completions.d/envfix.fish", "share/man/man1/envfix.1"}) {
      CAPTURE(f);
      CHECK(fs::file_size(prefix / f) > 1000);
    }
    CHECK(util::read_file(prefix / "share/man/man1/envfix.1").value() == generate({"man"}));
    std::error_code ec;
    fs::remove_all(prefix, ec);
  }
}

} // namespace cli_completions_test
