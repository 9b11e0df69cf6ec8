// The CLI contract every command keeps (docs/json.md; docs/architecture.md, JSON and exit codes): a
// failure with --format json prints exactly one document {"error": {code, message, causes, hint}} on
// stdout, and the exit code of its error class. Each case fails before anything is probed or changed.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/envfix_bin.hpp"
#include "tests/support/golden.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

namespace cli_contract_test {

using namespace envfix;
using json = nlohmann::json;

namespace {

util::SubprocessResult run(std::vector<std::string> args) {
  args.insert(args.begin(), envfix::testing::envfix_bin().string());
  util::SubprocessOptions o;
  o.timeout = std::chrono::seconds(600);
  o.unset_env = {"ENVFIX_GPU", "ENVFIX_DRIVER", "ENVFIX_INDEX_URL", "ENVFIX_MATRICES"};
  auto r = util::run_process(args, o);
  REQUIRE(r);
  return *r;
}

// One failing call per command, and the error code it must give.
const std::vector<std::pair<std::vector<std::string>, std::string>>& error_cases() {
  static const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"doctor", "--driver", "not-a-driver"}, "invalid-input"},
      {{"plan", "--driver", "not-a-driver", "torch"}, "invalid-input"},
      {{"apply", "--locked", "--lockfile", "/nonexistent/envfix.lock", "--yes"}, "not-found"},
      {{"lock", "--target", "gpu"}, "invalid-input"},
      {{"export", "--as", "pylock", "--lockfile", "/nonexistent/envfix.lock"}, "io"},
      {{"verify", "--layers", "nope"}, "invalid-input"},
      {{"matrix", "--gpu", "RTX 9999"}, "invalid-input"},
      {{"inspect", "--gpu", "sm_x", "/nonexistent.so"}, "invalid-input"},
  };
  return cases;
}

} // namespace

TEST_SUITE("cli/cli/contract") {

  TEST_CASE("every command's error path prints the JSON error document with --format json") {
    for (const auto& [args, code] : error_cases()) {
      auto a = args;
      a.insert(a.begin(), {"--format", "json"});
      CAPTURE(args.front());
      auto r = run(a);
      CAPTURE(r.out);
      CAPTURE(r.err);
      CHECK(r.exit_code != 0);
      auto doc = json::parse(r.out, nullptr, false);
      REQUIRE(doc.is_object());
      REQUIRE(doc.contains("error"));
      CHECK(doc["error"]["code"] == code);
      CHECK(!doc["error"]["message"].get<std::string>().empty());
      CHECK(doc["error"]["causes"].is_array());
      CHECK(r.err.find("error: ") != std::string::npos); // people still read it on stderr
    }
  }

  TEST_CASE("bytes that are not UTF-8 in an argument: a JSON document, never an abort") {
    // A path or a URL from the user's shell may hold any bytes; nlohmann::json throws on them by default.
    auto r = run({"doctor", "--format", "json", "--no-repro", "--no-kernels", "--gpu", "sm_90", "--driver", "580.65.06",
                  "--mirror", "https://mirror.invalid/\xff\xfe"});
    CAPTURE(r.err);
    CHECK(r.exit_code >= 0);
    CHECK(r.err.find("terminate called") == std::string::npos);
    auto doc = json::parse(r.out, nullptr, false);
    CHECK(doc.is_object());
  }

  TEST_CASE("export's file format is --as; the global --format stays text|json and says so") {
    auto r = run({"export", "--format", "pylock"});
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("envfix export --as pylock") != std::string::npos);
  }

  // Golden transcript (tests/support/golden.hpp) of the same failures: each command's JSON error
  // document and its stderr, whole. Fails on a changed message, cause, hint or code, or on a second
  // document or stray text on stdout.
  TEST_CASE("golden: every command's JSON error document") {
    std::string transcript;
    for (const auto& [args, code] : error_cases()) {
      auto a = args;
      a.insert(a.begin(), {"--format", "json"});
      auto r = run(a);
      std::string cmd = "$ envfix";
      for (const auto& x : a) cmd += " " + x;
      transcript += fmt::format("{}\n{}{}[exit {}]\n\n", cmd, r.err, r.out, r.exit_code);
    }
    const auto diff = testing::golden_mismatch(std::filesystem::path(ENVFIX_FIXTURES_DIR) / "golden/errors-json.txt",
                                               testing::filter_transcript(transcript));
    CHECK_MESSAGE(diff.empty(), diff);
  }

  TEST_CASE("issue 36 (6): hints that are true: a CUDA version as --driver, an arch no GPU has, a GPU's own name, offline") {
    auto driver = run({"plan", "torch", "--gpu", "sm_90", "--driver", "12.8", "--offline"});
    CHECK(driver.exit_code == 1);
    CHECK(driver.err.find("--driver '12.8' is a CUDA version, not a driver version") != std::string::npos);
    CHECK(driver.err.find("CUDA 12.8 needs a driver of at least 570.26") != std::string::npos);
    auto arch = run({"plan", "torch", "--gpu", "sm_900", "--driver", "580.65.06", "--offline"});
    CHECK(arch.exit_code == 1);
    CHECK(arch.err.find("compute capability 90.0: no GPU is near it") != std::string::npos);
    auto next = run({"--format", "json", "matrix", "--gpu", "sm_130"}); // a plausible next GPU stays plannable
    CHECK(next.exit_code == 0);
    auto name = run({"matrix", "--gpu", "1080"});
    CHECK(name.err.find("1080 = GeForce GTX 1080 ") != std::string::npos);
    const auto cache = util::make_temp_dir({}, "envfix-empty-cache").value();
    auto offline = run({"plan", "torch", "--gpu", "sm_90", "--driver", "580.65.06", "--offline", "--cache-dir", cache.string()});
    CHECK(offline.exit_code == 1);
    CHECK(offline.err.find("offline: the cache holds no page of torch") != std::string::npos);
    CHECK(offline.err.find("HTTP 404") == std::string::npos);
    std::error_code ec;
    std::filesystem::remove_all(cache, ec);
  }

  TEST_CASE("issue 36 (8): each command's --help lists the global options and examples; every example parses") {
    // Words of one example line, as a shell splits them: single quotes keep spaces and brackets.
    auto words = [](const std::string& line) {
      std::vector<std::string> out;
      std::string cur;
      bool quoted = false, any = false;
      for (char c : line) {
        if (c == '\'') {
          quoted = !quoted;
          any = true;
        } else if (c == ' ' && !quoted) {
          if (any) out.push_back(cur);
          cur.clear();
          any = false;
        } else {
          cur += c;
          any = true;
        }
      }
      if (any) out.push_back(cur);
      return out;
    };
    const auto cache = util::make_temp_dir({}, "envfix-examples").value();
    int examples = 0;
    for (const char* command : {"doctor", "plan", "apply", "lock", "verify", "export", "rollback"}) {
      CAPTURE(command);
      auto help = run({command, "--help"});
      CHECK(help.exit_code == 0);
      CHECK(help.out.find("Global options (before or after the command):") != std::string::npos);
      CHECK(help.out.find("  --python TEXT") != std::string::npos);
      CHECK(help.out.find("  --gpu TEXT") != std::string::npos);
      const auto at = help.out.find("Examples:\n");
      REQUIRE(at != std::string::npos);
      for (const auto& line : util::split(help.out.substr(at), '\n')) {
        if (!line.starts_with("  envfix ")) continue;
        auto args = words(line.substr(2));
        args.erase(args.begin()); // "envfix"
        // What runs or changes something is kept from running: verify and rollback only parse here
        // (--help after the example's words), the rest fail fast offline on an empty cache, or on
        // a file or lockfile this folder does not have; none may fail to parse.
        const bool parse_only = args.front() == "verify" || (args.front() == "rollback" && args.size() == 1);
        if (parse_only) args.push_back("--help");
        if (!parse_only) args.insert(args.end(), {"--offline", "--no-config", "--cache-dir", cache.string()});
        if (args.front() == "doctor" || (args.size() > 2 && args[2] == "doctor")) args.push_back("--no-repro");
        CAPTURE(line);
        auto r = run(args);
        CAPTURE(r.err);
        CHECK(r.err.find("Run with --help") == std::string::npos); // CLI11's word for a command line it refused
        CHECK(r.err.find("not expected") == std::string::npos);
        ++examples;
      }
    }
    CHECK(examples >= 15);
    std::error_code ec;
    std::filesystem::remove_all(cache, ec);
  }

} // TEST_SUITE

} // namespace cli_contract_test
