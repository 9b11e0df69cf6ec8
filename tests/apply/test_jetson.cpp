// Jetson and aarch64 hosts (issue 34): the fixture hosts of tests/fixtures/hosts (device tree, L4T,
// no NVML) in doctor, and plans for --platform manylinux_2_28_aarch64 against a PyTorch-shaped
// index whose torch is the aarch64 cu130 build (matrices/data/torch.yaml: 8.0, 9.0, 10.0, 11.0, 12.0,
// no 8.7).
#include <doctest/doctest.h>

#include "tests/apply/apply_world.hpp"

namespace apply_jetson_test {

using namespace envfix;
using namespace envfix::apply_test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kAarch64Index = R"({"simple_dir": "pt/whl/cu130", "files_dir": "pt/whl/files", "packages": [
  {"name": "torch", "version": "2.14.0+cu130", "tags": ["py3-none-manylinux_2_28_aarch64"]}
]})";

std::map<std::string, std::string> host_env(const std::string& host) {
  return {{"ENVFIX_SYSFS_ROOT", (fs::path(ENVFIX_FIXTURES_DIR) / "hosts" / host).string()}, {"ENVFIX_NO_NVML", "1"}};
}

} // namespace

TEST_CASE("doctor on fixture Jetsons: the GPU from the device tree, L4T → JetPack and CUDA, the JetPack index" *
          doctest::test_suite("integration/apply/jetson")) {
  World w(kAlphaIndex);
  auto ve = w.venv("venv");
  const auto py = (ve / "bin/python").string();
  auto doctor = [&](const std::string& host) {
    auto r = w.envfix({"--format", "json", "doctor", "--python", py, "--no-repro"}, host_env(host));
    INFO(r.err);
    return json::parse(r.out);
  };
  auto orin = doctor("orin-jp62");
  INFO(orin.dump());
  REQUIRE(orin["gpus"].size() == 1);
  CHECK(orin["gpus"][0]["cc"] == "8.7");
  CHECK(orin["gpus"][0]["name"] == "NVIDIA Jetson AGX Orin Developer Kit");
  CHECK(orin["driver"]["source"] == "l4t");
  CHECK(orin["driver"]["cuda"] == "12.6");
  const auto& jo = orin["base"]["jetson"];
  CHECK(jo["soc"] == "tegra234");
  CHECK(jo["l4t"] == "36.4.3");
  CHECK(jo["jetpack"] == "6.2");
  CHECK(jo["power_mode"] == "MAXN (0)");
  CHECK(jo["kernel"] == "5.15.148-tegra");
  CHECK(jo["indexes"]["torch"] == "https://pypi.jetson-ai-lab.io/jp6/cu126");
  bool finding = false;
  for (const auto& f : orin["findings"])
    if (f["code"] == "jetson") {
      finding = true;
      CHECK(f["message"].get<std::string>().find("only sm_87 SASS") != std::string::npos);
      CHECK(f["hint"].get<std::string>().find("--index-url https://pypi.jetson-ai-lab.io/jp6/cu126") != std::string::npos);
    }
  CHECK(finding);

  auto thor = doctor("thor-jp7");
  INFO(thor.dump());
  REQUIRE(thor["gpus"].size() == 1);
  CHECK(thor["gpus"][0]["cc"] == "11.0");
  CHECK(thor["driver"]["cuda"] == "13.0");
  CHECK(thor["base"]["jetson"]["jetpack"] == "7.0");
  CHECK(thor["base"]["jetson"]["power_mode"] == nullptr); // no nvpmodel files in that fixture

  // Not a Jetson: no jetson block, no GPU made up.
  auto bare = w.envfix({"--format", "json", "doctor", "--python", py, "--no-repro"}, {{"ENVFIX_NO_NVML", "1"}});
  auto jb = json::parse(bare.out);
  CHECK(jb["base"]["jetson"] == nullptr);
  CHECK(jb["gpus"].empty());
}

TEST_CASE("aarch64 plans: PyTorch's aarch64 cu130 build for GH200, GB10 and Thor; refused on an Orin (no sm_87)" *
          doctest::test_suite("integration/apply/jetson")) {
  World w(kAarch64Index);
  auto ve = w.venv("venv");
  const auto py = (ve / "bin/python").string();
  auto plan = [&](std::vector<std::string> extra, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> a{"--format", "json", "plan",       "torch==2.14.0",         "--mirror", w.base_url() + "/pt/whl",
                               "--python", py,     "--platform", "manylinux_2_28_aarch64"};
    a.insert(a.end(), extra.begin(), extra.end());
    return w.envfix(a, std::move(env));
  };
  for (const char* gpu : {"gh200", "gb10", "thor"}) {
    CAPTURE(gpu);
    auto r = plan({"--gpu", gpu, "--driver", "580.65.06"});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    auto j = json::parse(r.out);
    CHECK(j["variant"] == "cu130");
    CHECK(j["install"][0]["version"] == "2.14.0+cu130");
  }
  // A discrete 8.6 (A10) would run its sm_80 SASS; the Orin (integrated 8.7) does not.
  auto a10 = plan({"--gpu", "A10", "--driver", "580.65.06"});
  CHECK_MESSAGE(a10.rc == 0, a10.err);
  auto orin = plan({"--gpu", "orin", "--driver", "580.65.06"});
  CHECK(orin.rc == 1);
  INFO(orin.err);
  CHECK(orin.err.find("sm_87") != std::string::npos);
  CHECK(orin.err.find("integrated") != std::string::npos);

  // The same Orin found from its device tree on JetPack 7.2 (CUDA 13.2: the driver is not the reason).
  auto jp72 = plan({}, host_env("orin-jp72"));
  CHECK(jp72.rc == 1);
  INFO(jp72.err);
  CHECK(jp72.err.find("sm_87") != std::string::npos);
  CHECK(jp72.err.find("driver") == std::string::npos);
  // Thor from its device tree on JetPack 7.0: L4T's CUDA 13.0 runs the cu130 build, no --driver needed.
  // Its L4T row names a JetPack index too, here one nothing answers on: an index envfix adds on its own
  // is skipped with a warning that names it, and the plan stands on PyTorch's build (never a failed
  // plan for an index the user did not ask for; the embedded row's host is not reachable from a test).
  write(w.root() / "matrices/jetson.yaml", R"(schema: 1
l4t:
  - {release: "38", jetpack: "7.0", cuda: "13.0", driver: "580", soc: [tegra264],
     indexes: {torch: "https://127.0.0.1:9/jp/sbsa/cu130"}, confidence: secondary, source: "test"}
)");
  auto thor = plan({"--matrices", (w.root() / "matrices").string()}, host_env("thor-jp7"));
  REQUIRE_MESSAGE(thor.rc == 0, thor.err);
  auto jt = json::parse(thor.out);
  CHECK(jt["variant"] == "cu130");
  const auto warned = jt["warnings"].dump();
  CHECK(warned.find("the stable index https://127.0.0.1:9/jp/sbsa/cu130 (variant jetpack7.0) could not be read") !=
        std::string::npos);
}

namespace {

// JetPack-shaped trees (Jetson AI Lab's /jp6/cu126 and /sbsa/cu130): files without local labels,
// tagged linux_aarch64 as those indexes serve them.
constexpr const char* kJetpackIndex = R"({"simple_dir": "jp/jp6/cu126", "files_dir": "jp/files6", "packages": [
  {"name": "torch", "version": "2.8.0", "tags": ["py3-none-linux_aarch64"]}
]})";
constexpr const char* kSbsaIndex = R"({"simple_dir": "jp/sbsa/cu130", "files_dir": "jp/files7", "packages": [
  {"name": "torch", "version": "2.14.0", "tags": ["py3-none-linux_aarch64"]}
]})";

// The embedded L4T rows 36.4 and 38 with their JetPack indexes pointed at this test's server (an
// override corrects a row of the same release).
std::string jetson_override(const std::string& base) {
  return fmt::format(R"(schema: 1
l4t:
  - {{release: "36.4", jetpack: "6.2", cuda: "12.6", soc: [tegra234], indexes: {{torch: "{0}/jp/jp6/cu126"}},
     confidence: secondary, source: "test"}}
  - {{release: "38", jetpack: "7.0", cuda: "13.0", driver: "580", soc: [tegra264], indexes: {{torch: "{0}/jp/sbsa/cu130"}},
     confidence: secondary, source: "test"}}
)",
                     base);
}

} // namespace

TEST_CASE("Jetson plans from the JetPack index its L4T row names: an Orin's torch from jp6, a Thor's still PyTorch's own" *
          doctest::test_suite("integration/apply/jetson")) {
  World w(kAarch64Index);
  w.rebuild_index(kJetpackIndex);
  w.rebuild_index(kSbsaIndex);
  write(w.root() / "matrices/jetson.yaml", jetson_override(w.base_url()));
  auto ve = w.venv("venv");
  const auto py = (ve / "bin/python").string();
  auto plan = [&](const std::string& host, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"--format",   "json",
                               "plan",       "torch",
                               "--mirror",   w.base_url() + "/pt/whl",
                               "--python",   py,
                               "--platform", "manylinux_2_28_aarch64",
                               "--matrices", (w.root() / "matrices").string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return w.envfix(a, host_env(host));
  };
  // Orin, JetPack 6.2 (CUDA 12.6): PyTorch's cu130 build needs a newer CUDA than L4T's, and would lack
  // sm_87 anyway; the JetPack build has no arch data: planned, with the warnings that say so.
  auto orin = plan("orin-jp62");
  REQUIRE_MESSAGE(orin.rc == 0, orin.err);
  auto jo = json::parse(orin.out);
  INFO(jo.dump());
  CHECK(jo["variant"] == "jetpack6.2");
  CHECK(jo["index"].get<std::string>().ends_with("/jp/jp6/cu126"));
  REQUIRE(jo["install"].size() == 1);
  CHECK(jo["install"][0]["version"] == "2.8.0");
  const std::string warnings = jo["warnings"].dump();
  CHECK(warnings.find("JetPack 6.2 index") != std::string::npos);
  CHECK(warnings.find("checked after download") != std::string::npos);
  // Without the row's index (the embedded jetson.yaml points elsewhere; an empty override row here),
  // nothing fits: the JetPack index is what made the plan.
  write(w.root() / "matrices/jetson.yaml", fmt::format(R"(schema: 1
l4t:
  - {{release: "36.4", jetpack: "6.2", cuda: "12.6", soc: [tegra234], confidence: secondary, source: "test"}}
)"));
  auto none = plan("orin-jp62");
  CHECK(none.rc == 1);
  write(w.root() / "matrices/jetson.yaml", jetson_override(w.base_url()));

  // Thor, JetPack 7.0: PyTorch's own aarch64 cu130 build (sm_110 in its row) and the sbsa index hold
  // the same version; PyTorch's is preferred.
  auto thor = plan("thor-jp7");
  REQUIRE_MESSAGE(thor.rc == 0, thor.err);
  auto jt = json::parse(thor.out);
  CHECK(jt["variant"] == "cu130");
  CHECK(jt["install"][0]["version"] == "2.14.0+cu130");
  // --variant picks the JetPack index's build instead.
  auto thor_jp = plan("thor-jp7", {"--variant", "jetpack7.0"});
  REQUIRE_MESSAGE(thor_jp.rc == 0, thor_jp.err);
  CHECK(json::parse(thor_jp.out)["install"][0]["version"] == "2.14.0");
}

} // namespace apply_jetson_test
