// Third-party GPU extensions beside the framework (issue 33, item 1): the guide's image-generation
// case, an xformers-like wheel whose own CUDA library (built here by nvcc) has sm_90 only, next to
// a torch whose library has sm_120, on a planned RTX 5090 (--gpu sm_120). The real matrices plan
// torch; the wheels are fixtures named like the real ones. doctor must call it broken and name the
// extension; apply must replace it by a build that covers the GPU (falling through a newer build
// the kernel check refuses), or refuse with the build-from-source recipe when the index has none.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/apply/apply_world.hpp"

namespace apply_extensions_test {

using namespace envfix;
namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace envfix::apply_test;

namespace {

std::string package(const std::string& name, const std::string& version, const std::string& requires_dist,
                    const std::string& so_path, const std::string& arch) {
  return fmt::format(R"({{"name": "{}", "version": "{}", "tags": ["py3-none-manylinux_2_17_x86_64"], "requires_dist": [{}],
      "files": {{"{}/__init__.py": "VALUE = 1\n", "{}": {}}}}})",
                     name, version, requires_dist, name, so_path, byte_list(arch_shared_object(arch)));
}

// torch 2.7.0+cu128 (sm_120) and the given xformers builds (version → arch), on the cu128 index.
std::string index_with(const std::vector<std::pair<std::string, std::string>>& xformers) {
  std::string pkgs = package("torch", "2.7.0+cu128", "", "torch/lib/libtorch_cuda.so", "120");
  for (const auto& [v, arch] : xformers) pkgs += ",\n" + package("xformers", v, R"("torch==2.7.0")", "xformers/_C.so", arch);
  return fmt::format(R"({{"simple_dir": "pt/whl/cu128", "files_dir": "pt/whl/files", "packages": [{}]}})", pkgs);
}

struct Target {
  World& w;
  fs::path ve;
  std::vector<std::string> operator()(std::vector<std::string> head) const {
    for (const auto& a : {"--mirror", "--python", "--gpu", "--driver"}) head.push_back(a), head.push_back(value(a));
    return head;
  }
  std::string value(std::string_view opt) const {
    if (opt == "--mirror") return w.base_url() + "/pt/whl";
    if (opt == "--python") return (ve / "bin/python").string();
    if (opt == "--gpu") return "sm_120";
    return "580.65.06";
  }
};

const json* finding(const json& doctor, const std::string& code) {
  for (const auto& f : doctor["findings"])
    if (f["code"] == code) return &f;
  return nullptr;
}

} // namespace

TEST_SUITE("integration/apply/extensions") {

  TEST_CASE("a GPU extension without the GPU's arch: doctor names it; apply replaces it with a covering build, "
            "or refuses with the build-from-source recipe") {
    SUBCASE("the index has a covering build: apply falls through the newest (sm_90) to it") {
      World w(index_with({{"0.0.29", "90"}, {"0.0.30", "120"}, {"0.0.31", "90"}}));
      auto ve = w.venv("venv");
      Target t{w, ve};
      auto pip =
          w.pip(ve, {"install", "-q", "--index-url", w.http_base() + "/pt/whl/cu128", "torch==2.7.0+cu128", "xformers==0.0.29"});
      REQUIRE_MESSAGE(pip.ok(), pip.err);

      // The repro exercises torch alone (and cannot run on a planned GPU): the binaries decide.
      auto d = w.envfix(t({"doctor", "--format", "json", "--no-repro"}));
      CHECK(d.rc == 1);
      auto dj = json::parse(d.out);
      CHECK(dj["verdict"] == "broken");
      const json* f = finding(dj, "extension-arch-not-covered");
      REQUIRE(f != nullptr);
      CHECK((*f)["package"] == "xformers");
      CAPTURE((*f)["message"].get<std::string>());
      CHECK((*f)["message"].get<std::string>().find("xformers 0.0.29 (an extension of torch): none of its 2 GPU modules "
                                                    "has code for sm_120 (binaries read: _C.so)") != std::string::npos);
      CHECK(finding(dj, "arch-not-covered") == nullptr); // torch itself covers sm_120
      REQUIRE(dj["extensions"].size() == 1);
      CHECK(dj["extensions"][0]["kernels"]["coverage"]["sm_120"]["verdict"] == "none");
      const auto fix = dj["fix"].get<std::string>();
      CHECK_MESSAGE(fix.starts_with("envfix apply torch xformers "), fix);

      // The fix (without the smoke test: the planned GPU is not here to run fixture torch on).
      auto a = w.envfix(t({"apply", "torch", "xformers", "--yes", "--no-verify"}));
      REQUIRE(a.rc == 0);
      CHECK(a.err.find("kernel check refused xformers 0.0.31") != std::string::npos);
      CHECK(w.pip_list(ve).at("xformers") == "0.0.30");
      CHECK(w.pip_list(ve).at("torch") == "2.7.0+cu128");
      auto d2 = w.envfix(t({"doctor", "--format", "json", "--no-repro"}));
      CHECK(json::parse(d2.out)["verdict"] == "healthy");
      CHECK(d2.rc == 0);
    }
    SUBCASE("no build on the index covers the GPU: apply refuses, says how to build it, changes nothing") {
      World w(index_with({{"0.0.31", "90"}}));
      auto ve = w.venv("venv");
      Target t{w, ve};
      auto pip =
          w.pip(ve, {"install", "-q", "--index-url", w.http_base() + "/pt/whl/cu128", "torch==2.7.0+cu128", "xformers==0.0.31"});
      REQUIRE_MESSAGE(pip.ok(), pip.err);
      const auto before = manifest(ve);
      auto d = w.envfix(t({"doctor", "--format", "json", "--no-repro"}));
      CHECK(d.rc == 1);
      auto dj = json::parse(d.out);
      const json* f = finding(dj, "extension-arch-not-covered");
      REQUIRE(f != nullptr);
      CHECK((*f)["hint"].get<std::string>().find("TORCH_CUDA_ARCH_LIST=\"12.0\" python -m pip install --no-build-isolation "
                                                 "--no-binary xformers xformers==0.0.31") != std::string::npos);

      // The installed build is what the index serves: never "nothing to do" over binaries that cannot run.
      auto a = w.envfix(t({"apply", "torch", "xformers", "--yes", "--no-verify"}));
      CHECK(a.rc != 0);
      CHECK(a.err.find("Nothing to do") == std::string::npos);
      CHECK(a.err.find("no build of xformers on the index has code for sm_120 and fits torch 2.7.0") != std::string::npos);
      CHECK(a.err.find("TORCH_CUDA_ARCH_LIST=\"12.0\"") != std::string::npos);
      CHECK(a.err.find("xformers 0.0.31: read from the binaries (installed in") != std::string::npos);
      CHECK(a.err.find("--allow-cpu") == std::string::npos); // torch is fine: no CPU build or torch rebuild offered
      CHECK(manifest(ve) == before);
    }
  }

  // Issue 56, item 2: an xformers pinned to an older torch (Requires-Dist torch==2.6.0, sm_90 only) beside
  // a torch that covers the GPU. The first line names that, never "no GPU build of torch covers"; the
  // hint is the recipe: torch without it, then xformers built for that torch with its arch variable.
  TEST_CASE("an extension pinned to another framework version: the error names it and gives the recipe") {
    World w(fmt::format(R"({{"simple_dir": "pt/whl/cu128", "files_dir": "pt/whl/files", "packages": [{}, {}]}})",
                        package("torch", "2.7.0+cu128", "", "torch/lib/libtorch_cuda.so", "120"),
                        package("xformers", "0.0.29.post2", R"("torch==2.6.0")", "xformers/_C.so", "90")));
    auto ve = w.venv("venv");
    Target t{w, ve};
    const auto before = manifest(ve);
    auto a = w.envfix(t({"apply", "torch", "xformers", "--yes", "--no-verify"}));
    CHECK(a.rc != 0);
    CHECK(manifest(ve) == before);
    const auto first = a.err.substr(0, a.err.find('\n'));
    CHECK_MESSAGE(
        first.find("torch 2.7.0+cu128 (stable cu128) has code for sm_120, but no build of xformers on its index fits it") !=
            std::string::npos,
        first);
    CHECK(a.err.find("no GPU build of torch covers") == std::string::npos);
    CHECK(a.err.find("torch==2.6.0") != std::string::npos); // the resolver's own words: what pins it
    CHECK(a.err.find("TORCH_CUDA_ARCH_LIST=\"12.0\"") != std::string::npos);
    CHECK(a.err.find("install torch 2.7.0+cu128 without xformers") != std::string::npos);
    // Or keep xformers with the torch it pins, built from source for the GPU (a checkout at its tag).
    CHECK_MESSAGE(a.err.find("or keep xformers with torch 2.6.0, built from source for this GPU") != std::string::npos, a.err);
    CHECK(a.err.find("git clone --branch v2.6.0") != std::string::npos);
  }

  // Issue 56, item 2: the same first index, and a configured extra index with an xformers built for
  // the covering torch. The first-index rule kept it out (xformers is on the first index); now the
  // extension whose every build there pins another torch is looked for on every configured index,
  // and the warning names where its build came from. Failing before: the extension-gap error.
  TEST_CASE("an extension pinned to another framework version: a fitting build on another configured index is used") {
    World w(fmt::format(R"({{"simple_dir": "pt/whl/cu128", "files_dir": "pt/whl/files", "packages": [{}, {}]}})",
                        package("torch", "2.7.0+cu128", "", "torch/lib/libtorch_cuda.so", "120"),
                        package("xformers", "0.0.29.post2", R"("torch==2.6.0")", "xformers/_C.so", "90")));
    w.rebuild_index(fmt::format(R"({{"simple_dir": "extra/simple", "files_dir": "extra/files", "packages": [{}]}})",
                                package("xformers", "0.0.30", R"("torch==2.7.0")", "xformers/_C.so", "120")));
    auto ve = w.venv("venv");
    Target t{w, ve};
    auto a =
        w.envfix(t({"apply", "torch", "xformers", "--yes", "--no-verify", "--extra-index-url", w.base_url() + "/extra/simple"}));
    REQUIRE_MESSAGE(a.rc == 0, a.err);
    CHECK(w.pip_list(ve).at("xformers") == "0.0.30");
    CHECK_MESSAGE(a.err.find("xformers 0.0.30 comes from") != std::string::npos, a.err);
    CHECK(a.err.find("/extra/simple") != std::string::npos);
    // Without the extra index it is still the gap, named as before.
    auto ve2 = w.venv("venv2");
    Target t2{w, ve2};
    auto b = w.envfix(t2({"plan", "torch", "xformers"}));
    CHECK(b.rc != 0);
    CHECK(b.err.find("no build of xformers on its index fits it") != std::string::npos);
  }

  // Issue 33, item 8: a lock made against one mirror, applied behind another (`--locked --mirror`): the
  // framework index's files are re-pointed by the lock's own index and checked by their locked hashes,
  // and apply says so. The first mirror's tree is gone, so without re-pointing every download 404s.
  TEST_CASE("apply --locked --mirror re-points the framework index's locked files to the mirror, and says so") {
    World w(index_with({{"0.0.30", "120"}}));
    auto ve = w.venv("venv");
    Target t{w, ve};
    auto lock = w.envfix(t({"lock", "torch", "xformers", "-o", w.lockfile().string()}));
    REQUIRE(lock.rc == 0);
    const auto text = slurp(w.lockfile());
    REQUIRE(text.find(w.base_url() + "/pt/whl/files/") != std::string::npos);
    fs::create_directories(w.index_dir() / "mirror2");
    fs::rename(w.index_dir() / "pt", w.index_dir() / "mirror2" / "pt");
    const std::string second = w.base_url() + "/mirror2/pt/whl";
    auto locked = [&](std::vector<std::string> extra) {
      std::vector<std::string> a{"apply", "--locked",    "--lockfile", w.lockfile().string(),
                                 "--yes", "--no-verify", "--python",   (ve / "bin/python").string(),
                                 "--gpu", "sm_120",      "--driver",   "580.65.06"};
      a.insert(a.end(), extra.begin(), extra.end());
      return w.envfix(a);
    };
    auto gone = locked({});
    CHECK(gone.rc != 0); // the lock's own URLs answer 404 now
    auto a = locked({"--mirror", second});
    REQUIRE(a.rc == 0);
    CHECK(a.err.find("--mirror: 2 locked files re-pointed from " + w.base_url() + "/pt/whl to " + second) != std::string::npos);
    CHECK(w.pip_list(ve).at("xformers") == "0.0.30");
    CHECK(w.pip_list(ve).at("torch") == "2.7.0+cu128");
    CHECK(slurp(w.lockfile()) == text); // applying a lock never rewrites it

    // A mirror that serves another file under a locked name (issue 60, 8): refused by the lock's sha256,
    // and the error says the file is not the locked one (the lock recorded the hash, not the index).
    fs::copy(w.index_dir() / "mirror2", w.index_dir() / "mirror3", fs::copy_options::recursive);
    fs::path wheel;
    for (const auto& e : fs::directory_iterator(w.index_dir() / "mirror3/pt/whl/files")) {
      const auto name = e.path().filename().string(); // the locked one: the lock names it (URL-encoded)
      auto encoded = name;
      if (auto plus = encoded.find('+'); plus != std::string::npos) encoded.replace(plus, 1, "%2B");
      if (name.starts_with("torch-") && (text.find(name) != std::string::npos || text.find(encoded) != std::string::npos))
        wheel = e.path();
    }
    REQUIRE(!wheel.empty());
    auto bytes = slurp(wheel);
    bytes[bytes.size() / 2] ^= 0x01; // same size, other bytes
    write(wheel, bytes);
    std::vector<std::string> args{"apply",      "--locked",
                                  "--lockfile", w.lockfile().string(),
                                  "--yes",      "--no-verify",
                                  "--python",   (ve / "bin/python").string(),
                                  "--gpu",      "sm_120",
                                  "--driver",   "580.65.06",
                                  "--mirror",   w.base_url() + "/mirror3/pt/whl"};
    auto tampered = w.envfix(args, {}, w.root() / "cache3");
    CHECK(tampered.rc != 0);
    INFO(tampered.err);
    CHECK(tampered.err.find("sha256 mismatch for torch-") != std::string::npos);
    CHECK(tampered.err.find("is not the one the lockfile recorded") != std::string::npos);
    CHECK(tampered.err.find("the index published") == std::string::npos);
    CHECK(w.pip_list(ve).at("torch") == "2.7.0+cu128");
  }

  // Issue 33, item 8: `lock`'s bytes depend on the index, not on what this machine's cache has read.
  // An apply reads the set's binaries (the kernel evidence store then knows both files); a lock made
  // afterwards with that cache is the lock made before it, and the one made with an empty cache.
  TEST_CASE("lock: the same index gives the same bytes whatever the kernel evidence in the local cache") {
    World w(index_with({{"0.0.30", "120"}}));
    auto ve = w.venv("venv");
    Target t{w, ve};
    auto lock_to = [&](const std::string& name, const fs::path& cache) {
      auto r = w.envfix(t({"lock", "torch", "xformers", "-o", (w.root() / name).string()}), {}, cache);
      REQUIRE_MESSAGE(r.rc == 0, r.err);
      return slurp(w.root() / name);
    };
    const auto before = lock_to("before.lock", w.cache());
    REQUIRE(w.envfix(t({"apply", "torch", "xformers", "--yes", "--no-verify", "--lockfile", w.lockfile().string()})).rc == 0);
    REQUIRE(fs::exists(w.cache() / "evidence-v2" / "builds")); // the binaries were read and recorded
    const auto after = lock_to("after.lock", w.cache());
    const auto fresh = lock_to("fresh.lock", w.root() / "empty-cache");
    CHECK(after == before);
    CHECK(fresh == before);
    CHECK(before.find("verified: true") == std::string::npos); // lock reads no binary: claims only
  }

} // TEST_SUITE

} // namespace apply_extensions_test
