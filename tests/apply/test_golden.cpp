// Golden transcripts of the main commands against a real index (tests/support/golden.hpp): the whole
// text or JSON a user sees, compared with tests/fixtures/golden/*.txt after filtering what differs
// between runs and machines (durations, the test's temp root, the index's port, hashes, the
// interpreter's version, the driver, the link mode). ENVFIX_UPDATE_GOLDEN=1 rewrites the files; a
// mismatch prints a unified diff.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "tests/apply/apply_world.hpp"
#include "tests/support/golden.hpp"

namespace apply_golden_test {

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

// The commands of one world, each as "$ envfix ARGS", its stderr and stdout, and its exit code.
// `common` options go after a with() command's own arguments, or before them when `common_first`.
struct Transcript {
  World& w;
  std::vector<std::string> common = {};
  bool common_first = false;
  std::string text = {};
  std::vector<std::string> with(std::vector<std::string> a) const {
    a.insert(common_first ? a.begin() : a.end(), common.begin(), common.end());
    return a;
  }
  int step(const std::vector<std::string>& args) {
    auto r = w.envfix(args, {{"NO_COLOR", "1"}});
    std::string cmd = "$ envfix";
    for (const auto& a : args) cmd += " " + a;
    text += cmd + "\n" + r.err + r.out + fmt::format("[exit {}]\n\n", r.rc);
    return r.rc;
  }
  void check(const std::string& name) const {
    const auto got = testing::filter_transcript(
        text, {{w.index_url(), "<index>"}, {w.http_base(), "<http>"}, {w.base_url(), "<https>"}, {w.root().string(), "<root>"}});
    const auto diff = testing::golden_mismatch(fs::path(ENVFIX_FIXTURES_DIR) / "golden" / (name + ".txt"), got);
    CHECK_MESSAGE(diff.empty(), diff);
  }
};

} // namespace

TEST_SUITE("integration/apply/golden") {

  // Fails on any change of the text these commands print: a reworded plan line, another order of the
  // change list, a lost "nothing to do" on the second apply, lock --check's verdict, export's lines, or
  // the unsatisfiable request's message and hint.
  TEST_CASE("golden transcripts: plan, apply, apply again, lock, lock --check, export") {
    World w(kIndex);
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    // --gpu none: the same host on a GPU machine and off it.
    Transcript t{w, {"--gpu", "none", "--index-url", w.index_url(), "--python", py, "--lockfile", w.lockfile().string()}};
    auto with = [&](std::vector<std::string> a) { return t.with(std::move(a)); };
    CHECK(t.step(with({"plan", "alpha"})) == 0);
    CHECK(t.step(with({"apply", "alpha", "--yes"})) == 0);
    CHECK(t.step(with({"apply", "alpha", "--yes"})) == 0);
    CHECK(t.step(with({"lock", "alpha"})) == 0);
    CHECK(t.step(with({"lock", "alpha", "--check"})) == 0);
    CHECK(t.step({"export", "--as", "requirements", "--lockfile", w.lockfile().string()}) == 0);
    CHECK(t.step(with({"plan", "alpha==9"})) == 1);
    t.check("plain-set");
  }

  // The same commands' JSON documents (docs/json.md), and each one's JSON error document: fails on a
  // renamed or dropped key, a changed value (the plan's pins, the lock's target), or an error code.
  TEST_CASE("golden transcripts: plan, lock and export as JSON, and their JSON errors") {
    World w(kIndex);
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    Transcript t{
        w,
        {"--format", "json", "--gpu", "none", "--index-url", w.index_url(), "--python", py, "--lockfile", w.lockfile().string()},
        true};
    auto with = [&](std::vector<std::string> a) { return t.with(std::move(a)); };
    CHECK(t.step(with({"plan", "alpha"})) == 0);
    CHECK(t.step(with({"lock", "alpha"})) == 0);
    CHECK(t.step(with({"lock", "alpha", "--check"})) == 0);
    CHECK(t.step({"--format", "json", "export", "--as", "pylock", "--lockfile", w.lockfile().string()}) == 0);
    CHECK(t.step(with({"plan", "alpha==9"})) == 1);
    CHECK(t.step(with({"lock", "alpha==9"})) == 1);
    CHECK(t.step({"--format", "json", "export", "--as", "pylock", "--lockfile", (w.root() / "none.lock").string()}) != 0);
    CHECK(t.step({"--format", "json", "--gpu", "none", "--python", py, "apply", "--locked", "--yes", "--lockfile",
                  (w.root() / "none.lock").string()}) != 0);
    t.check("plain-set-json");
  }

  // A framework plan over a variant index (--index-url keeps the GPU, driver and kernel checks), text
  // and JSON, and its refusal on a GPU the build has no code for: fails when the chosen variant, the
  // "why" line, the driver check or the rejection's message, causes or hint change.
  TEST_CASE("golden transcripts: a framework plan on a variant index, and its refusal on sm_120") {
    World w(kTorchCu126Index);
    auto ve = w.venv("venv");
    const auto py = (ve / "bin/python").string();
    Transcript t{w};
    const std::string pt = w.base_url() + "/pt/whl/cu126";
    CHECK(t.step({"plan", "torch", "--index-url", pt, "--gpu", "sm_90", "--driver", "580.65.06", "--python", py}) == 0);
    CHECK(t.step({"--format", "json", "plan", "torch", "--index-url", pt, "--gpu", "sm_90", "--driver", "580.65.06", "--python",
                  py}) == 0);
    CHECK(t.step({"plan", "torch", "--index-url", pt, "--gpu", "sm_120", "--driver", "580.65.06", "--python", py}) == 1);
    CHECK(t.step({"--format", "json", "plan", "torch", "--index-url", pt, "--gpu", "sm_120", "--driver", "580.65.06", "--python",
                  py}) == 1);
    CHECK(t.step({"plan", "torch", "--index-url", pt, "--gpu", "sm_90", "--driver", "470.42.01", "--python", py}) == 1);
    t.check("framework-plan");
  }

} // TEST_SUITE

} // namespace apply_golden_test
