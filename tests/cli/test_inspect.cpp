// `envfix inspect` end to end: the real binary on synthetic fatbin/ELF files (and nvcc output
// when the wheel tests have built it), text and JSON output, exit codes.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/wheel/kernel_fixtures.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"
#include "tests/support/envfix_bin.hpp"

namespace cli_inspect_test {

using namespace envfix;
using namespace envfix::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

inline std::filesystem::path inspect_bin() { return envfix::testing::envfix_bin(); }

util::SubprocessResult run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), inspect_bin().string());
  util::SubprocessOptions o;
  o.set_env = std::move(env);
  auto r = util::run_process(args, o);
  REQUIRE(r);
  return *r;
}

void write_bytes(const fs::path& p, const Bytes& b) {
  REQUIRE(util::write_file_atomic(p, std::string_view(reinterpret_cast<const char*>(b.data()), b.size())));
}

} // namespace

TEST_SUITE("cli/cli/inspect") {
  TEST_CASE("inspect: JSON fields, coverage and exit codes") {
    auto dir = util::make_temp_dir({}, "envfix-inspect").value();
    // Two TUs: {sm_80, sm_90, compute_90 (zstd)} and {sm_90a}; plus an embedded sm_120 container.
    auto lib = dir / "libfake.so";
    write_bytes(lib, fake_elf({{".nv_fatbin", concat({fake_container({{2, 80}, {2, 90}, {1, 90, 0x8011, 80, 8}}),
                                                      fake_container({{2, 90, 0x100011}})})},
                               {".rodata", fake_container({{2, 120}})}}));
    auto r = run({"inspect", lib.string(), "--gpu", "sm_90", "--gpu", "8.6", "--format", "json"});
    CHECK(r.exit_code == 0); // 8.6 is only partly covered: information, not a refusal
    auto j = json::parse(r.out);
    REQUIRE(j["files"].size() == 1);
    auto f = j["files"][0];
    CHECK(f["path"] == lib.string());
    CHECK(f["sass"] == json({"sm_80", "sm_90", "sm_90a", "sm_120"}));
    CHECK(f["ptx"] == json({"compute_90"}));
    CHECK(f["lto"] == json::array());
    CHECK(f["containers"] == 3);
    CHECK(f["entries"] == 5);
    CHECK(f["compressed"] == 1);
    CHECK(f["zstd"] == true);
    auto counts = [](int runnable, int total, int sass, int ptx, int newer, int older, int other) {
      return json({{"runnable", runnable},
                   {"total", total},
                   {"sass", sass},
                   {"ptx", ptx},
                   {"newer_only", newer},
                   {"older_only", older},
                   {"other", other}});
    };
    // sm_90: both registered containers run (sm_90, sm_90a); the embedded sm_120 one is for a newer arch.
    CHECK(f["coverage"]["sm_90"] == json({{"verdict", "partial"},
                                          {"runnable", 2},
                                          {"total", 2},
                                          {"via", "sass"},
                                          {"via_sass", 2},
                                          {"via_ptx", 0},
                                          {"embedded_runnable", 0},
                                          {"embedded_total", 1},
                                          {"registered", counts(2, 2, 2, 0, 0, 0, 0)},
                                          {"embedded", counts(0, 1, 0, 0, 1, 0, 0)}}));
    CHECK(f["coverage"]["sm_86"]["runnable"] == 1);
    CHECK(f["coverage"]["sm_86"]["total"] == 2);
    CHECK(f["coverage"]["sm_86"]["verdict"] == "partial");
    CHECK(f["coverage"]["sm_86"]["registered"]["newer_only"] == 1); // the sm_90a module
    // No entry runs on a 7.5 device: `none`, and the exit code says so.
    auto r75 = run({"inspect", lib.string(), "--gpu", "7.5", "--format", "json"});
    CHECK(r75.exit_code == 1);
    CHECK(json::parse(r75.out)["files"][0]["coverage"]["sm_75"]["verdict"] == "none");
    CHECK(f["sections"][".nv_fatbin"]["containers"] == 2);

    r = run({"inspect", lib.string(), "--gpu", "9.0"});
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty()); // human output goes to stderr
    CHECK(r.err.find("libfake.so: 3 containers, 5 entries") != std::string::npos);
    CHECK(r.err.find("SASS sm_80 sm_90 sm_90a sm_120; PTX compute_90") != std::string::npos);
    CHECK(r.err.find("sm_90 partial: 2/3 containers runnable; registered 2/2 (2 by SASS); embedded, loaded by the "
                     "library itself 0/1 (1 only for newer archs)") != std::string::npos);

    r = run({"inspect", lib.string(), "--gpu", "12.0", "--color", "never"});
    CHECK(r.exit_code == 0); // partial, not none
    CHECK(r.err.find("sm_120 partial: 2/3 containers runnable; registered 1/2 (1 only by PTX JIT, 1 only for older archs); "
                     "embedded, loaded by the library itself 1/1 (1 by SASS)") != std::string::npos);

    // No --gpu: listing only, exit 0.
    CHECK(run({"inspect", lib.string()}).exit_code == 0);

    // A bad file among good ones: the good one is still reported; exit 1.
    auto bad = dir / "libbad.so";
    write_bytes(bad, Bytes{0x7f, 'E', 'L', 'F', 2, 1, 1});
    r = run({"inspect", lib.string(), bad.string(), "--format", "json"});
    CHECK(r.exit_code == 1);
    j = json::parse(r.out);
    REQUIRE(j["files"].size() == 2);
    CHECK(j["files"][1]["error"].get<std::string>().find("libbad.so") != std::string::npos);
    r = run({"inspect", bad.string()});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("error: ") != std::string::npos);
    CHECK(r.err.find("truncated") != std::string::npos);

    // The GPUs as every command takes them (api::planned_gpus): a product name through the matrices,
    // and ENVFIX_GPU when there is no --gpu (issue 38: inspect parsed --gpu itself, and both failed).
    auto by_name = json::parse(run({"inspect", lib.string(), "--gpu", "H100", "--format", "json"}).out);
    CHECK(by_name["files"][0]["coverage"]["sm_90"] == f["coverage"]["sm_90"]);
    auto by_env = json::parse(run({"inspect", lib.string(), "--format", "json"}, {{"ENVFIX_GPU", "sm_75,RTX 3090"}}).out);
    CHECK(by_env["files"][0]["coverage"]["sm_75"]["verdict"] == "none");
    CHECK(by_env["files"][0]["coverage"]["sm_86"] == f["coverage"]["sm_86"]);
    // Two names of one arch judge it once.
    CHECK(json::parse(
              run({"inspect", lib.string(), "--gpu", "9.0", "--gpu", "sm_90", "--format", "json"}).out)["files"][0]["coverage"]
              .size() == 1);

    // A missing file and a bad --gpu are user errors; an arch written wrong says what is wrong with it.
    CHECK(run({"inspect", (dir / "nope.so").string()}).exit_code == 1);
    r = run({"inspect", lib.string(), "--gpu", "sm_90a"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("no a/f suffix") != std::string::npos);
    r = run({"inspect", lib.string(), "--gpu", "RTX 9999"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("unknown GPU 'RTX 9999'") != std::string::npos);
    fs::remove_all(dir);
  }

  TEST_CASE("inspect: nvcc-built library (when the wheel tests built it)") {
    auto so = fs::path(ENVFIX_BINARY_DIR) / "kernel-fixtures/variants.so";
    if (!fs::exists(so)) {
      MESSAGE("no nvcc fixture at ", so.string(), " (run test_wheel --test-suite=integration first); skipped");
      return;
    }
    auto r = run({"inspect", so.string(), "--gpu", "sm_103", "--gpu", "sm_89", "--format", "json"});
    CHECK(r.exit_code == 1);
    auto f = json::parse(r.out)["files"][0];
    CHECK(f["sass"] == json({"sm_90a", "sm_100a", "sm_100f", "sm_120f"}));
    CHECK(f["coverage"]["sm_103"]["runnable"] == f["coverage"]["sm_103"]["total"]);
    CHECK(f["coverage"]["sm_89"]["runnable"] == 0);
  }
} // TEST_SUITE

} // namespace cli_inspect_test
