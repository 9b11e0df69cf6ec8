// `envfix matrix`, run as a real process (ENVFIX_BIN, set by ctest).
#include <doctest/doctest.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/fs.hpp"
#include "util/subprocess.hpp"
#include "wheel/kernel_evidence.hpp"
#include "tests/support/envfix_bin.hpp"
#include "tests/support/golden.hpp"

namespace cli_matrix_test {

using namespace envfix;
using nlohmann::json;

namespace {

using envfix::testing::envfix_bin;

util::SubprocessResult run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), envfix_bin().string());
  util::SubprocessOptions o;
  o.set_env = std::move(env);
  o.set_env["NO_COLOR"] = "1";
  if (!o.set_env.contains("ENVFIX_MATRICES")) o.unset_env = {"ENVFIX_MATRICES"};
  auto r = util::run_process(args, o);
  REQUIRE_MESSAGE(r, (r ? "" : r.error().render()));
  return *r;
}

json run_json(std::vector<std::string> args) {
  args.push_back("--format");
  args.push_back("json");
  auto r = run(args);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

const json* find_build(const json& builds, std::string_view version, std::string_view variant) {
  for (const auto& b : builds) {
    if (b["variant"] != variant) continue;
    for (const auto& v : b["versions"])
      if (v == version) return &b;
  }
  return nullptr;
}

} // namespace

TEST_SUITE("cli/cli/matrix") {

  TEST_CASE("envfix --version prints the version and needs no command") {
    auto r = run({"--version"});
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == std::string("envfix ") + ENVFIX_TEST_VERSION + "\n");
  }

  TEST_CASE("matrix --gpu \"RTX 5090\": releases that run on sm_120 and the minimum driver") {
    json j = run_json({"matrix", "--gpu", "RTX 5090"});
    REQUIRE(j["gpus"].size() == 1);
    const json& g = j["gpus"][0];
    CHECK(g["name"] == "GeForce RTX 5090");
    CHECK(g["cc"] == "12.0");
    CHECK(g["arch"] == "sm_120");
    CHECK(g["family"] == "blackwell");
    CHECK(g["min_driver"]["version"] == "570.26");
    CHECK(g["min_driver"]["cuda"] == "12.8");
    const json* torch = nullptr;
    for (const auto& f : g["frameworks"])
      if (f["name"] == "torch") torch = &f;
    REQUIRE(torch);
    const json* b = find_build((*torch)["builds"], "2.7.0", "cu128");
    REQUIRE(b);
    CHECK((*b)["runs"] == "native");
    CHECK((*b)["via"] == "sm_120");
    CHECK((*b)["min_driver"] == "570.26");
    CHECK(find_build((*torch)["builds"], "2.7.0", "cu126") == nullptr); // no sm_120: not listed
    CHECK((*torch)["newest"]["native"]["version"] == "2.15.0");
    // TensorFlow runs only by JIT of its compute_90 PTX.
    for (const auto& f : g["frameworks"])
      if (f["name"] == "tensorflow") {
        CHECK(f["newest"]["native"].is_null());
        CHECK(f["builds"][0]["runs"] == "jit");
      }
  }

  TEST_CASE("matrix --gpu sm_61 --framework torch: the newest release for a GTX 1080 (text and JSON)") {
    json j = run_json({"matrix", "--gpu", "sm_61", "--framework", "torch"});
    const json& g = j["gpus"][0];
    CHECK(g["cc"] == "6.1");
    CHECK(g["name"].is_null());
    REQUIRE(g["frameworks"].size() == 1);
    CHECK(g["frameworks"][0]["newest"]["native"]["version"] == "2.14.1");
    CHECK(g["frameworks"][0]["newest"]["native"]["variant"] == "cu126");
    for (const auto& b : g["frameworks"][0]["builds"]) CHECK(b["variant"] != "cu130");

    auto t = run({"matrix", "--gpu", "GTX 1080", "--framework", "torch"});
    CAPTURE(t.err);
    CHECK(t.exit_code == 0);
    CHECK(t.out.empty()); // human output goes to stderr
    CHECK(t.err.find("GTX 1080 = GeForce GTX 1080 → sm_61 (compute capability 6.1, pascal)") != std::string::npos);
    CHECK(t.err.find("torch: newest stable release with sm_61 code: 2.14.1 (cu126)") != std::string::npos);
  }

  TEST_CASE("matrix --framework torch --version 2.7.0: variants, archs, companions, Python tags, drivers") {
    json j = run_json({"matrix", "--framework", "torch", "--version", "2.7.0"});
    CHECK(j["version"] == "2.7.0");
    CHECK(j["companions"]["torchvision"] == "0.22.0");
    CHECK(j["companions"]["torchaudio"] == "2.7.0");
    CHECK(j["release"]["python"] == json::array({"cp39", "cp310", "cp311", "cp312", "cp313", "cp313t"})); // free-threaded: cp313t
    CHECK(j["release"]["pypi_default"] == "cu126");
    REQUIRE(j["variants"].size() == 3);
    bool seen128 = false;
    for (const auto& v : j["variants"]) {
      if (v["name"] != "cu128") continue;
      seen128 = true;
      CHECK(v["cuda"] == "12.8");
      CHECK(v["index_url"] == "https://download.pytorch.org/whl/cu128");
      CHECK(v["min_driver"]["linux"] == "570.26");
      CHECK(v["minor_compat_driver"]["linux"] == "525.60.13");
      const auto& lin = v["platforms"][0];
      CHECK(lin["platform"] == "linux_x86_64");
      CHECK(lin["sass"] == json::array({"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"}));
      CHECK(lin["ptx"] == json::array({"compute_120"}));
      CHECK(lin["verified"] == true);
    }
    CHECK(seen128);
    // --mirror rewrites the index URLs; --gpu adds a verdict per platform.
    json m = run_json(
        {"matrix", "--framework", "torch", "--version", "2.7.0+cu128", "--mirror", "https://m.example/whl", "--gpu", "RTX 5090"});
    for (const auto& v : m["variants"]) {
      CHECK(v["index_url"].get<std::string>().starts_with("https://m.example/whl/"));
      CHECK(v["platforms"][0]["runs_on"]["sm_120"] == (v["name"] == "cu128" ? "native" : "none"));
    }
    auto t = run({"matrix", "--framework", "torch", "--version", "2.7.0"});
    CHECK(t.exit_code == 0);
    CHECK(t.err.find("companions: torchvision 0.22.0, torchaudio 2.7.0, torchcodec 0.4.0") != std::string::npos);
    CHECK(t.err.find("SASS sm_75 sm_80 sm_86 sm_90 sm_100 sm_120; PTX compute_120") != std::string::npos);
    CHECK(t.err.find("python: cp39 cp310 cp311 cp312 cp313 cp313t\n") != std::string::npos);
    // 2.12.1 dropped cp313t but kept cp314t (pytorch/pytorch#186654, matrices/data/torch.yaml).
    json n = run_json({"matrix", "--framework", "torch", "--version", "2.12.1"});
    CHECK(n["release"]["python"].dump().find("\"cp313t\"") == std::string::npos);
    CHECK(n["release"]["python"].dump().find("\"cp314t\"") != std::string::npos);
  }

  TEST_CASE("matrix errors: unknown GPU, framework, version → exit 1 with a hint") {
    auto g = run({"matrix", "--gpu", "RTX 9999"});
    CHECK(g.exit_code == 1);
    CHECK(g.err.find("error: unknown GPU 'RTX 9999'") != std::string::npos);
    CHECK(g.err.find("hint: ") != std::string::npos);
    auto f = run({"matrix", "--framework", "nope", "--version", "1.0"});
    CHECK(f.exit_code == 1);
    CHECK(f.err.find("unknown framework 'nope'") != std::string::npos);
    auto v = run({"matrix", "--framework", "torch", "--version", "2.99.0"});
    CHECK(v.exit_code == 1);
    CHECK(v.err.find("torch 2.99.0 is not in the matrices") != std::string::npos);
  }

  TEST_CASE("matrix with a bad override: every problem with its location, exit 1, no fallback") {
    auto dir = util::make_temp_dir({}, "envfix-matrix-cli").value();
    REQUIRE(util::write_file_atomic(dir / "a.yaml", R"y(schema: 1
frameworks:
  torch:
    releases:
      - versions: ["2.7.0"]
        python: [cp312]
        source: "dup"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_1200], ptx: [], confidence: verified, source: "x"}
      - versions: ["9.9.9"]
        python: cp312
        colour: blue
        source: "x"
        variants: {}
)y"));
    REQUIRE(util::write_file_atomic(dir / "b.yaml", "schema: 1\ngpus: [\n"));
    for (bool via_env : {false, true}) {
      CAPTURE(via_env);
      auto r = via_env ? run({"matrix", "--gpu", "sm_90"}, {{"ENVFIX_MATRICES", dir.string()}})
                       : run({"matrix", "--gpu", "sm_90", "--matrices", dir.string()});
      CAPTURE(r.err);
      CHECK(r.exit_code == 1);
      CHECK(r.out.empty());
      std::string a = (dir / "a.yaml").string(), b = (dir / "b.yaml").string();
      CHECK(r.err.find("error: invalid matrices data: 5 problems") != std::string::npos);
      CHECK(r.err.find("caused by: " + a +
                       ":10:35: frameworks.torch.releases[0].variants.cu128.linux_x86_64.sass[0]: unknown arch") !=
            std::string::npos);
      CHECK(r.err.find("caused by: " + a + ":5:9: frameworks.torch.releases[0]: duplicate release 2.7.0") != std::string::npos);
      CHECK(r.err.find("caused by: " + a + ":12:17: frameworks.torch.releases[1].python: expected a list, found a scalar") !=
            std::string::npos);
      CHECK(r.err.find("caused by: " + a + ":13:9: frameworks.torch.releases[1]: unknown key 'colour'") != std::string::npos);
      CHECK(r.err.find("caused by: " + b + ":") != std::string::npos);
      CHECK(r.err.find("YAML syntax error") != std::string::npos);
    }
    auto missing = run({"matrix", "--matrices", (dir / "nope").string()});
    CHECK(missing.exit_code == 1);
    CHECK(missing.err.find("does not exist") != std::string::npos);
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("matrix with the tinyfw override: a framework defined entirely by a file") {
    std::string dir = std::string(ENVFIX_SOURCE_DIR) + "/tests/matrices/fixtures/tinyfw";
    auto r = run({"matrix", "--matrices", dir, "--framework", "tinyfw", "--version", "1.1.0.dev20261120", "--format", "json"});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    json j = json::parse(r.out);
    CHECK(j["companions"]["tinyfw-vision"] == "0.2.0.dev20261120");
    CHECK(j["variants"][0]["index_url"] == "https://example.invalid/tinyfw/whl/nightly/cu130");
    auto g = run({"matrix", "--matrices", dir, "--framework", "tinyfw", "--gpu", "H200", "--format", "json"});
    REQUIRE(g.exit_code == 0);
    json jg = json::parse(g.out);
    CHECK(jg["gpus"][0]["frameworks"][0]["newest"]["jit"]["version"] == "1.0.0");
    CHECK(jg["gpus"][0]["frameworks"][0]["newest"]["native"].is_null()); // only the nightly is native on 9.0
  }

  TEST_CASE("matrix --gpu sm_61/sm_70 --framework torch: the legacy ladder names the last release") {
    for (const char* arch : {"sm_61", "sm_70"}) {
      CAPTURE(arch);
      json j = run_json({"matrix", "--gpu", arch, "--framework", "torch"});
      const json& last = j["gpus"][0]["frameworks"][0]["last_release"];
      REQUIRE(last.is_object());
      CHECK(last["version"] == "2.14.1");
      CHECK(last["variant"] == "cu126");
      CHECK(last["dropped_from"] == "2.15.0");
      CHECK(last["source"].get<std::string>().find("pytorch/pytorch#190385") != std::string::npos);
      auto t = run({"matrix", "--gpu", arch, "--framework", "torch"});
      CHECK(t.err.find(fmt::format("torch 2.14.1 (cu126) is the last release with code for {}: torch from 2.15.0 on drops it",
                                   arch)) != std::string::npos);
    }
    CHECK(run_json({"matrix", "--gpu", "sm_75", "--framework", "torch"})["gpus"][0]["frameworks"][0]["last_release"].is_null());
  }

  TEST_CASE("matrix --gpu: the first toolkit with code for the GPU (sm_121 → 12.9), and the table's start said as such") {
    json j = run_json({"matrix", "--gpu", "GB10", "--framework", "torch"});
    CHECK(j["gpus"][0]["min_driver"]["cuda"] == "12.9");
    CHECK(j["gpus"][0]["min_driver"]["version"] == "575.51.03");
    CHECK(j["gpus"][0]["min_driver"]["own_arch"] == true);
    auto t = run({"matrix", "--gpu", "GB10", "--framework", "torch"});
    CHECK(t.err.find("(CUDA 12.9, the first toolkit with code for sm_121)") != std::string::npos);
    CHECK(t.err.find("CUDA 12.8") == std::string::npos);
    auto old = run({"matrix", "--gpu", "sm_61", "--framework", "torch"});
    CHECK(old.err.find("the oldest toolkit in the matrices, which already has code for sm_61") != std::string::npos);
    CHECK(old.err.find("the first toolkit with code for sm_61") == std::string::npos);
    CHECK(run_json({"matrix", "--gpu", "sm_61"})["gpus"][0]["min_driver"]["oldest_listed"] == true);
    // Rubin (issue 34): CUDA 13.4 targets sm_107 but its release driver is unconfirmed: the 13.x floor.
    json rj = run_json({"matrix", "--gpu", "rubin"});
    CHECK(rj["gpus"][0]["min_driver"]["cuda"] == "13.4");
    CHECK(rj["gpus"][0]["min_driver"]["version"].is_null());
    auto rubin = run({"matrix", "--gpu", "rubin"});
    CHECK(rubin.err.find("minimum driver: not confirmed (CUDA 13.4 is the first toolkit with code for sm_107") !=
          std::string::npos);
    CHECK(rubin.err.find("the CUDA 13.x floor applies: 580") != std::string::npos);
    CHECK(rubin.err.find("no toolkit in the matrices targets this GPU") == std::string::npos);
  }

  TEST_CASE("matrix --gpu: names as people type them (Jetson Thor, rtx5090) and nvidia-smi strings") {
    for (auto [q, cc] : {std::pair{"Jetson Thor", "11.0"}, std::pair{"rtx5090", "12.0"},
                         std::pair{"NVIDIA H100 80GB HBM3", "9.0"}, std::pair{"Tesla V100-SXM2-16GB", "7.0"}}) {
      CAPTURE(q);
      json j = run_json({"matrix", "--gpu", q, "--framework", "torch"});
      CHECK(j["gpus"][0]["cc"] == cc);
    }
  }

  TEST_CASE("matrix --cache-dir DIR: kernel facts read from binaries are shown above the table, with disagreement") {
    auto dir = util::make_temp_dir(std::filesystem::temp_directory_path(), "envfix-matrix-ev-").value();
    wheel::EvidenceStore store(dir / wheel::evidence_dir_name, "test secret");
    auto group = [](std::vector<const char*> archs, std::uint64_t n) {
      wheel::ContainerGroup g;
      for (const char* a : archs) g.archs.push_back(specs::GpuArch::parse(a).value());
      g.count = n;
      return g;
    };
    // torch 2.11.0+cu130 as read on an H200: libtorch_cuda.so from sm_75, libtorch_cuda_linalg.so from sm_80.
    wheel::KernelProfile cuda, linalg;
    cuda.groups = {group({"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"}, 444)};
    linalg.groups = {group({"sm_80", "sm_86", "sm_90", "sm_100", "sm_120"}, 99)};
    wheel::BuildKey key{"torch", "2.11.0+cu130", "cu130", "manylinux_2_28_x86_64"};
    REQUIRE(store.put_build({key,
                             "downloaded torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
                             {{"torch/lib/libtorch_cuda.so", cuda}, {"torch/lib/libtorch_cuda_linalg.so", linalg}},
                             std::string(64, 'c')}));

    auto t = run({"matrix", "--framework", "torch", "--cache-dir", dir.string()});
    CAPTURE(t.err);
    CHECK(t.exit_code == 0);
    auto ev = t.err.find("read from the binary on this machine");
    REQUIRE(ev != std::string::npos);
    CHECK(ev < t.err.find("2.11.0 ")); // above the table's rows
    CHECK(t.err.find("torch 2.11.0+cu130 (cu130, manylinux_2_28_x86_64): SASS sm_75 sm_80 sm_86 sm_90 sm_100 sm_120") !=
          std::string::npos);
    // The table's measured row lists the `a` cubins and sm_89 this (synthetic) read lacks.
    CHECK(t.err.find("disagrees with the matrices row 2.11.0") != std::string::npos);
    CHECK(t.err.find("embedded:torch.yaml:") != std::string::npos);

    json j = run_json({"matrix", "--framework", "torch", "--cache-dir", dir.string()});
    const json& e = j["frameworks"][0]["evidence"];
    REQUIRE(e.size() == 1);
    CHECK(e[0]["version"] == "2.11.0+cu130");
    CHECK(e[0]["files"] == 2);
    CHECK(e[0]["containers"] == 543);
    CHECK(e[0]["matrices"]["agrees"] == false);
    CHECK(e[0]["matrices"]["table_only"].size() > 0);

    // Per GPU asked: the coverage verdict of the package (a T4 is only partly covered).
    json jg = run_json({"matrix", "--gpu", "T4", "--framework", "torch", "--cache-dir", dir.string()});
    const json& ge = jg["gpus"][0]["frameworks"][0]["evidence"];
    REQUIRE(ge.size() == 1);
    CHECK(ge[0]["coverage"]["sm_75"]["verdict"] == "partial");
    CHECK(ge[0]["coverage"]["sm_75"]["runnable"] == 444);
    CHECK(ge[0]["coverage"]["sm_75"]["total"] == 543);
    json jh = run_json({"matrix", "--gpu", "H200", "--framework", "torch", "--version", "2.11.0", "--cache-dir", dir.string()});
    REQUIRE(jh["evidence"].size() == 1);
    CHECK(jh["evidence"][0]["coverage"]["sm_90"]["verdict"] == "full");
    // Another version: not shown.
    CHECK(run_json({"matrix", "--framework", "torch", "--version", "2.10.0", "--cache-dir", dir.string()})["evidence"].empty());
    // A variant's kernel package (jax's plugin, api/matrix.cpp learned_builds) is the framework's evidence
    // too; jax's learned build is not torch's.
    wheel::KernelProfile plugin;
    plugin.groups = {group({"sm_80", "sm_90", "sm_100", "sm_120"}, 52)};
    wheel::BuildKey pkey{"jax-cuda13-plugin", "0.11.2", "", "manylinux_2_27_x86_64"};
    REQUIRE(store.put_build({pkey, "installed", {{"jax_plugins/xla_cuda13/xla_cuda_plugin.so", plugin}}}));
    json jj = run_json({"matrix", "--gpu", "H200", "--framework", "jax", "--cache-dir", dir.string()});
    const json& je = jj["gpus"][0]["frameworks"][0]["evidence"];
    REQUIRE(je.size() == 1);
    CHECK(je[0]["project"] == "jax-cuda13-plugin");
    CHECK(je[0]["coverage"]["sm_90"]["verdict"] == "full");
    CHECK(je[0]["matrices"].is_null()); // not the main package: the table has no row for it
    CHECK(run_json({"matrix", "--framework", "torch", "--cache-dir", dir.string()})["frameworks"][0]["evidence"].size() == 1);
    // Without evidence nothing is shown.
    auto empty = util::make_temp_dir(std::filesystem::temp_directory_path(), "envfix-matrix-noev-").value();
    CHECK(run({"matrix", "--framework", "torch", "--cache-dir", empty.string()}).err.find("read from the binary") ==
          std::string::npos);
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(empty);
  }

  // Golden transcript (tests/support/golden.hpp) of `matrix` in text and JSON: a GPU query (sm_61, the
  // legacy ladder) and a release query (torch 2.7.0 for sm_90 and sm_120), with an empty cache so no
  // evidence from another run shows. Fails when the matrices' rows for these change (regenerate after a
  // deliberate matrices update), or when matrix's layout, keys or wording change.
  TEST_CASE("matrix golden: --gpu sm_61 and --framework torch --version 2.7.0, text and JSON") {
    const auto cache = util::make_temp_dir({}, "envfix-matrix-golden").value();
    std::string transcript;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"matrix", "--gpu", "sm_61", "--framework", "torch"},
          {"matrix", "--framework", "torch", "--version", "2.7.0", "--gpu", "sm_90", "--gpu", "sm_120"}})
      for (bool as_json : {false, true}) {
        auto a = args;
        if (as_json) a.insert(a.begin(), {"--format", "json"});
        auto r = run(a, {{"ENVFIX_CACHE_DIR", cache.string()}});
        std::string cmd = "$ envfix";
        for (const auto& x : a) cmd += " " + x;
        transcript += fmt::format("{}\n{}{}[exit {}]\n\n", cmd, r.err, r.out, r.exit_code);
      }
    std::error_code ec;
    std::filesystem::remove_all(cache, ec);
    const auto diff = testing::golden_mismatch(std::filesystem::path(ENVFIX_FIXTURES_DIR) / "golden/matrix.txt",
                                               testing::filter_transcript(transcript, {{cache.string(), "<cache>"}}));
    CHECK_MESSAGE(diff.empty(), diff);
  }

} // TEST_SUITE

} // namespace cli_matrix_test
