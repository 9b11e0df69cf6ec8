// Golden transcripts of the main commands (plan, apply, apply again, lock, lock --check, export): the
// whole text a user sees, compared line by line with tests/fixtures/golden/*.txt after filtering what
// differs between runs and machines (durations, the test's temp root, the index's port, hashes, the
// interpreter's version, the driver, the link mode). ENVFIX_UPDATE_GOLDEN=1 rewrites the files.
#include <doctest/doctest.h>

#include <regex>
#include <sstream>

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "tests/apply/apply_world.hpp"

using namespace envfix;
namespace fs = std::filesystem;
using namespace envfix::apply_test;

namespace {

constexpr const char* kIndex = R"({"packages": [
  {"name": "alpha", "version": "1.0", "requires_dist": ["beta>=1.5"]},
  {"name": "alpha", "version": "1.1", "requires_dist": ["beta>=2.0,<3", "delta==0.3"]},
  {"name": "beta", "version": "1.0"},
  {"name": "beta", "version": "2.0"},
  {"name": "delta", "version": "0.3"}
]})";

std::string filtered(std::string text, const World& w) {
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (std::size_t i = 0; !from.empty() && (i = text.find(from, i)) != std::string::npos; i += to.size()) text.replace(i, from.size(), to);
  };
  replace_all(w.index_url(), "<index>");
  replace_all(w.http_base(), "<http>");
  replace_all(w.root().string(), "<root>");
  const std::pair<const char*, const char*> rules[] = {
      {R"(\b\d+(\.\d+)?(ms|s)\b)", "<t>"},
      {R"(sha256[:=][0-9a-f]{64})", "sha256:<hash>"},
      {R"(Python \d+\.\d+\.\d+ \(cp\d+(, glibc \d+\.\d+)?\))", "Python <python>"},
      {R"(driver [^;]+;)", "driver <driver>;"},
      {R"(\((clone|hardlink|copy)(, )?)", "(<link-mode>$2"},
      {R"(\d+(\.\d+)? (B|KiB|MiB))", "<size>"},
      {R"(https://127\.0\.0\.1:\d+)", "<https>"},
      {R"(transaction [0-9a-zA-Z_-]+)", "transaction <id>"},
      {R"(-cp\d+t?-)", "-<cp>-"},
  };
  for (const auto& [re, to] : rules) text = std::regex_replace(text, std::regex(re), to);
  return text;
}

void check_golden(const std::string& name, const std::string& text) {
  const fs::path file = fs::path(ENVFIX_FIXTURES_DIR) / "golden" / (name + ".txt");
  if (const char* u = std::getenv("ENVFIX_UPDATE_GOLDEN"); u && std::string_view(u) == "1") { // a test switch, not an envfix variable
    fs::create_directories(file.parent_path());
    REQUIRE(util::write_file_atomic(file, text, 0644));
    return;
  }
  auto want = util::read_file(file);
  REQUIRE_MESSAGE(want, "missing golden file ", file.string(), " (ENVFIX_UPDATE_GOLDEN=1 writes it)");
  // Line by line, so a failure names the first line that differs.
  std::istringstream a(*want), b(text);
  std::string la, lb;
  for (int n = 1;; ++n) {
    const bool ga = static_cast<bool>(std::getline(a, la)), gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) break;
    CAPTURE(n);
    CHECK_MESSAGE(la == lb, file.filename().string(), ":", n, ": expected \"", la, "\", got \"", lb, "\"");
    if (la != lb) break;
  }
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("golden transcripts: plan, apply, apply again, lock, lock --check, export") {
  World w(kIndex);
  auto ve = w.venv("venv");
  const auto py = (ve / "bin/python").string();
  std::string transcript;
  auto step = [&](const std::vector<std::string>& args) {
    auto r = w.envfix(args, {{"NO_COLOR", "1"}});
    std::string cmd = "$ envfix";
    for (const auto& a : args) cmd += " " + a;
    transcript += cmd + "\n" + r.err + r.out + fmt::format("[exit {}]\n\n", r.rc);
    return r.rc;
  };
  // --gpu none: the same host on a GPU machine and off it.
  const std::vector<std::string> common{"--gpu", "none", "--index-url", w.index_url(), "--python", py, "--lockfile",
                                        w.lockfile().string()};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), common.begin(), common.end());
    return a;
  };
  CHECK(step(with({"plan", "alpha"})) == 0);
  CHECK(step(with({"apply", "alpha", "--yes"})) == 0);
  CHECK(step(with({"apply", "alpha", "--yes"})) == 0);
  CHECK(step(with({"lock", "alpha"})) == 0);
  CHECK(step(with({"lock", "alpha", "--check"})) == 0);
  CHECK(step({"export", "--as", "requirements", "--lockfile", w.lockfile().string()}) == 0);
  CHECK(step(with({"plan", "alpha==9"})) == 1);
  check_golden("plain-set", filtered(transcript, w));
}

} // TEST_SUITE
