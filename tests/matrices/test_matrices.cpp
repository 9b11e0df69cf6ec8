#include <doctest/doctest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "matrices/compiled.hpp"
#include "matrices/knowledge.hpp"
#include "util/fs.hpp"

using namespace envfix;
using namespace envfix::matrices;
using specs::ComputeCapability;
using specs::CudaVersion;
using specs::GpuArch;
using specs::Version;

namespace {

const Knowledge& embedded() {
  static const Knowledge k = [] {
    auto r = Knowledge::load_embedded();
    if (!r) FAIL(r.error().render());
    return *r;
  }();
  return k;
}

Version ver(std::string_view s) { return Version::parse(s).value(); }
ComputeCapability cc(std::string_view s) { return ComputeCapability::parse(s).value(); }

std::vector<std::string> names(const std::optional<std::vector<GpuArch>>& list) {
  std::vector<std::string> out;
  if (list)
    for (const auto& a : *list) out.push_back(a.to_string());
  return out;
}

const VariantBuild* find_variant(const std::vector<VariantBuild>& v, std::string_view name) {
  for (const auto& b : v)
    if (b.variant == name) return &b;
  return nullptr;
}

// Loads embedded data plus the given override texts.
Expected<Knowledge> with_override(std::vector<Knowledge::SourceFile> extra) {
  auto files = Knowledge::embedded_files();
  for (auto& f : extra) files.push_back(std::move(f));
  return Knowledge::load_from(files);
}

bool has_location(const std::string& problem, std::string_view file) {
  // "file:line:column: …"
  std::regex re(std::string(file) + R"(:\d+:\d+: )");
  return std::regex_search(problem, re);
}

std::string all_causes(const Error& e) {
  std::string s = e.message + "\n";
  for (const auto& c : e.causes) s += c + "\n";
  return s;
}

} // namespace

TEST_SUITE("unit/matrices/matrices") {

  TEST_CASE("embedded matrices load without problems and cover the frameworks") {
    const auto& k = embedded();
    for (const char* f : {"torch", "paddlepaddle", "tensorflow", "jax"}) CHECK_MESSAGE(k.framework(f) != nullptr, f);
    CHECK(k.framework("paddlepaddle-gpu") == k.framework("paddlepaddle")); // by main package too
    CHECK(k.framework("nope") == nullptr);
    const Framework* t = k.framework("torch");
    REQUIRE(t);
    CHECK(t->main_package == "torch");
    CHECK(t->companions == std::vector<std::string>{"torchvision", "torchaudio"});
    CHECK(t->optional_companions == std::vector<std::string>{"torchcodec"});
    // torch 1.13 through 2.13 as releases, plus the nightly line.
    for (const char* v : {"1.13.0", "1.13.1", "2.0.0", "2.1.2", "2.4.1", "2.6.0", "2.7.0", "2.7.1", "2.8.0", "2.9.1", "2.10.0",
                          "2.11.0", "2.12.0", "2.12.1", "2.13.0", "2.14.0", "2.14.1", "2.15.0"})
      CHECK_MESSAGE(t->release(ver(v)) != nullptr, v);
    CHECK(t->release(ver("2.15.0.dev20260801")) != nullptr);
    CHECK(t->release(ver("2.17.0.dev20261203")) != nullptr);
    CHECK(t->release(ver("2.18.0.dev20270101")) == nullptr);
    CHECK(t->release(ver("2.99.0")) == nullptr);
    // ROCm and CPU variants are listed even though envfix cannot judge AMD kernels.
    REQUIRE(t->variant("rocm6.4"));
    CHECK(t->variant("rocm6.4")->kind == "rocm");
    CHECK(t->variant("cpu")->kind == "cpu");
    for (const char* v : {"cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130", "cu132", "cu134"}) CHECK(t->variant(v));
  }

  TEST_CASE("invariants: companions map to releases, CUDA has drivers, archs buildable, sources present") {
    const auto& k = embedded();
    int checked_archs = 0, coupling_rows = 0;
    for (const auto& f : k.frameworks()) {
      CAPTURE(f.name);
      CHECK(!f.source.empty());
      CHECK(!f.smoke.step_a.empty());
      CHECK(!f.smoke.step_b.empty());
      for (const auto& c : f.companions) CHECK_MESSAGE(f.smoke.companions.contains(c), "smoke check for " << c);
      // Every shipped framework can be smoke-tested on a host without a GPU.
      CHECK(!f.smoke.cpu.empty());
      CHECK(f.smoke.cpu.find("cuda") == std::string::npos);
      for (const auto& [c, code] : f.smoke.cpu_companions) CHECK_MESSAGE(code.find("cuda") == std::string::npos, c);
      for (const auto& c : f.coupling) {
        ++coupling_rows;
        CHECK(!c.source.empty());
        if (c.version) CHECK_MESSAGE(f.release(*c.version) != nullptr, "coupling row " << c.version->to_string());
        for (const auto& [name, v] : c.companions) {
          bool known = std::count(f.companions.begin(), f.companions.end(), name) +
                       std::count(f.optional_companions.begin(), f.optional_companions.end(), name);
          CHECK_MESSAGE(known, name);
          CHECK(Version::parse(v).has_value());
        }
      }
      for (const auto& v : f.variants) {
        if (v.kind != "cuda") continue;
        REQUIRE(v.cuda);
        const CudaToolkit* tk = k.toolkit(*v.cuda);
        REQUIRE_MESSAGE(tk, "variant " << v.name << " CUDA " << v.cuda->to_string());
        auto floor = k.driver_floor(*v.cuda);
        REQUIRE(floor);
        CHECK(is_driver_version(floor->version));
      }
      for (const auto& r : f.releases) {
        CAPTURE(r.label());
        CHECK(!r.source.empty());
        CHECK(!r.python.empty());
        CHECK(!r.variants.empty());
        for (const auto& rv : r.variants) {
          const Variant* var = f.variant(rv.variant);
          REQUIRE_MESSAGE(var, rv.variant);
          for (const auto& b : rv.platforms) {
            CHECK_MESSAGE(!b.source.empty(), rv.variant << " " << b.platform);
            if (!b.known() || !var->cuda) continue;
            const CudaToolkit* tk = k.toolkit(*var->cuda);
            REQUIRE(tk);
            for (const auto& a : *b.sass) {
              CHECK(a.kind == GpuArch::Kind::sass);
              CHECK_MESSAGE(tk->can_target(a), a.to_string() << " with CUDA " << tk->version.to_string());
              ++checked_archs;
            }
            for (const auto& a : *b.ptx) {
              CHECK(a.kind == GpuArch::Kind::ptx);
              CHECK_MESSAGE(tk->can_target(a), a.to_string() << " with CUDA " << tk->version.to_string());
              ++checked_archs;
            }
          }
        }
      }
    }
    CHECK(checked_archs > 500);
    CHECK(coupling_rows >= 28);
    for (const auto& t : k.toolkits()) {
      CHECK(!t.source.empty());
      CHECK(!t.sass.empty());
      if (!t.min_driver_linux.empty())
        CHECK(compare_driver_versions(t.minor_compat_linux, t.min_driver_linux) <= 0);
      else
        CHECK(!t.minor_compat_linux.empty()); // 13.4, 13.5: only the major's floor is known
    }
    for (const auto& g : k.gpus()) {
      CHECK(!g.source.empty());
      CHECK(!g.family.empty());
    }
  }

  TEST_CASE("spot checks: torch 2.7.0 cu128 carries sm_120, cu126 does not") {
    const auto& k = embedded();
    auto v = k.variants_for("torch", ver("2.7.0"));
    REQUIRE(v.size() == 3);
    const VariantBuild* cu128 = find_variant(v, "cu128");
    const VariantBuild* cu126 = find_variant(v, "cu126");
    REQUIRE(cu128);
    REQUIRE(cu126);
    auto s128 = names(cu128->sass), s126 = names(cu126->sass);
    CHECK(std::count(s128.begin(), s128.end(), "sm_120") == 1);
    CHECK(std::count(s126.begin(), s126.end(), "sm_120") == 0);
    CHECK(names(cu128->ptx) == std::vector<std::string>{"compute_120"});
    CHECK(cu128->verified);
    CHECK(cu128->cuda == CudaVersion{12, 8});
    CHECK(cu128->runs_on(cc("12.0")) == RunKind::native);
    CHECK(cu126->runs_on(cc("12.0")) == RunKind::none);
    CHECK(cu126->runs_on(cc("6.1")) == RunKind::native); // sm_60 cubins run on 6.1
    CHECK(cu128->runs_on(cc("6.1")) == RunKind::none);
    CHECK(cu128->runnable_arch(cc("12.0"))->to_string() == "sm_120");
    // A local label is ignored: the installed 2.7.0+cu128 finds the 2.7.0 row.
    CHECK(k.variants_for("torch", ver("2.7.0+cu128")).size() == 3);
    // Platforms differ: Windows cu128 has sm_61 SASS, Linux does not.
    auto win = k.variants_for("torch", ver("2.7.1"), "windows_x86_64");
    auto wsass = names(find_variant(win, "cu128")->sass);
    CHECK(std::count(wsass.begin(), wsass.end(), "sm_61") == 1);
  }

  TEST_CASE("spot check: torch 2.11 cu130 equals the archs measured on the H200 (cuobjdump --list-elf)") {
    auto text = util::read_file(std::string(ENVFIX_FIXTURES_DIR) + "/gpu-h200/libtorch_cuda-2.11.0+cu130.cuobjdump-list-elf.txt");
    REQUIRE(text);
    std::set<std::string> measured;
    std::regex re(R"(\.(sm_\d+[af]?)\.cubin)");
    std::size_t cubins = 0;
    for (std::sregex_iterator it(text->begin(), text->end(), re), end; it != end; ++it) {
      measured.insert((*it)[1].str());
      ++cubins;
    }
    CHECK(cubins == 2789);
    CHECK(measured.size() == 12);
    auto v = embedded().variants_for("torch", ver("2.11.0+cu130"));
    const VariantBuild* cu130 = find_variant(v, "cu130");
    REQUIRE(cu130);
    auto data = names(cu130->sass);
    CHECK(std::set<std::string>(data.begin(), data.end()) == measured);
    CHECK(cu130->ptx->empty());
    CHECK(cu130->verified);
    CHECK(cu130->runs_on(cc("9.0")) == RunKind::native);
  }

  TEST_CASE("spot checks: drivers") {
    const auto& k = embedded();
    CHECK(k.min_driver({12, 8}) == "570.26");
    CHECK(k.min_driver({12, 8}, "windows") == "570.65");
    CHECK(k.min_driver({13, 0}) == "580.65.06");
    CHECK(k.min_driver({13, 0}, "windows") == std::nullopt); // N/A
    CHECK(k.min_driver({9, 9}) == std::nullopt);
    CHECK(k.minor_compat_driver({12, 8}) == "525.60.13");
    CHECK(k.driver_supports("570.26", {12, 8}, false));
    CHECK(!k.driver_supports("570.25.99", {12, 8}, false));
    CHECK(k.driver_supports("535.104.05", {12, 8}, true)); // minor-version compatibility
    CHECK(!k.driver_supports("535.104.05", {12, 8}, false));
    CHECK(!k.driver_supports("575.57.08", {13, 0}));        // a 12.x driver cannot run 13.x
    CHECK(k.driver_supports("580.159.04", {13, 0}, false)); // the H200 fixture's driver
    CHECK(!k.driver_supports("garbage", {12, 8}));
    // What a lock records (issue 56, item 7): the floor the host really runs the set by.
    CHECK(k.set_driver_floor({12, 8}, "580.65.06") == "570.26");
    CHECK(k.set_driver_floor({12, 8}, "535.104.05") == "525.60.13"); // minor-version compatibility
    CHECK(k.set_driver_floor({12, 8}, "") == "570.26");              // no driver known: the toolkit's own
    CHECK(k.set_driver_floor({12, 8}, "470.82.01") == "570.26");     // a driver that runs it not at all
    CHECK(k.set_driver_floor({13, 0}, "580.159.04") == "580.65.06");
    CHECK(compare_driver_versions("570.26", "570.124.06") < 0);
    CHECK(compare_driver_versions("580", "580.0.0") == 0);
    CHECK(compare_driver_versions("590.44.01", "580.95.05") > 0);
    CHECK(is_driver_version("580"));
    CHECK(!is_driver_version("580..1"));
    CHECK(!is_driver_version("r580"));
  }

  TEST_CASE("spot checks: GPU names") {
    const auto& k = embedded();
    struct Row {
      const char* query;
      const char* cc;
      const char* family;
    };
    for (auto r :
         {Row{"RTX 5090", "12.0", "blackwell"}, Row{"NVIDIA GeForce RTX 5090", "12.0", "blackwell"}, Row{"H200", "9.0", "hopper"},
          Row{"NVIDIA H200", "9.0", "hopper"}, Row{"GTX 1080", "6.1", "pascal"}, Row{"GeForce GTX 1080 Ti", "6.1", "pascal"},
          Row{"NVIDIA H100 80GB HBM3", "9.0", "hopper"}, Row{"NVIDIA A100-SXM4-80GB", "8.0", "ampere"},
          Row{"Tesla V100-SXM2-16GB", "7.0", "volta"}, Row{"tesla t4", "7.5", "turing"},
          Row{"NVIDIA RTX 6000 Ada Generation", "8.9", "ada"}, Row{"Quadro RTX 6000", "7.5", "turing"},
          Row{"DGX Spark", "12.1", "blackwell"}, Row{"RTX 5070 Ti", "12.0", "blackwell"}}) {
      CAPTURE(r.query);
      auto g = k.gpu(r.query);
      REQUIRE(g);
      CHECK(g->cc.to_string() == r.cc);
      CHECK(g->family == r.family);
    }
    // China-market SKUs (issue 56): as nvidia-smi and torch print them, and as people type them; the
    // product is the D model, not the export one its name begins with.
    struct Named {
      const char* query;
      const char* name;
      const char* cc;
    };
    for (auto r :
         {Named{"NVIDIA GeForce RTX 5090 D", "GeForce RTX 5090 D", "12.0"}, Named{"RTX 5090D", "GeForce RTX 5090 D", "12.0"},
          Named{"NVIDIA GeForce RTX 5090 D v2", "GeForce RTX 5090 D", "12.0"},
          Named{"NVIDIA GeForce RTX 4090 D", "GeForce RTX 4090 D", "8.9"}, Named{"rtx4090d", "GeForce RTX 4090 D", "8.9"},
          Named{"NVIDIA L20", "NVIDIA L20", "8.9"}, Named{"NVIDIA L40S", "NVIDIA L40S", "8.9"},
          Named{"NVIDIA H20", "NVIDIA H20", "9.0"}, Named{"NVIDIA GeForce RTX 4090", "GeForce RTX 4090", "8.9"}}) {
      const std::string query = r.query;
      CAPTURE(query);
      auto g = k.gpu(r.query);
      REQUIRE(g);
      CHECK(g->name == r.name);
      CHECK(g->cc.to_string() == r.cc);
    }
    CHECK(!k.gpu("RTX 9999"));
    CHECK(!k.gpu(""));
    CHECK(!k.gpu("H2")); // no prefix match inside a word
    CHECK(normalize_gpu_name("  NVIDIA   GeForce RTX_5090 ") == "rtx 5090");
  }

  TEST_CASE("newest torch release that still runs on a GTX 1080 (sm_61)") {
    const auto& k = embedded();
    const Framework* t = k.framework("torch");
    std::optional<Version> newest;
    for (const auto& r : t->releases) {
      if (r.channels != std::vector<std::string>{"stable"}) continue;
      for (const auto& v : r.versions)
        for (const auto& b : k.variants_for("torch", v))
          if (b.runs_on(cc("6.1")) == RunKind::native && (!newest || v > *newest)) newest = v;
    }
    REQUIRE(newest);
    CHECK(newest->to_string() == "2.14.1"); // 2.14.1 is 2.14.0's patch release on the same matrix
    // …only through cu126: every CUDA 13 build dropped Pascal.
    for (const auto& b : k.variants_for("torch", ver("2.14.0")))
      CHECK((b.runs_on(cc("6.1")) == RunKind::native) == (b.variant == "cu126"));
  }

  TEST_CASE("nightly line, companions and index URLs") {
    const auto& k = embedded();
    auto v = k.variants_for("torch", ver("2.15.0.dev20260801+cu130"));
    const VariantBuild* cu130 = find_variant(v, "cu130");
    REQUIRE(cu130);
    CHECK(cu130->channels == std::vector<std::string>{"nightly"});
    CHECK(names(cu130->ptx) == std::vector<std::string>{"compute_120"});
    CHECK(!cu130->verified);
    CHECK(cu130->runs_on(cc("12.1")) == RunKind::native); // sm_120 cubin runs on GB10
    CHECK(cu130->runs_on(cc("11.0")) == RunKind::none);   // Thor: no sm_110 on x86, and compute_120 needs CC >= 12.0

    CHECK(k.companion_version("torch", ver("2.7.0"), "torchvision") == "0.22.0");
    CHECK(k.companion_version("torch", ver("2.7.0+cu128"), "torchaudio") == "2.7.0");
    CHECK(k.companion_version("torch", ver("2.0.1"), "torchaudio") == "2.0.2");
    CHECK(k.companion_version("torch", ver("2.12.0"), "torchaudio") == std::nullopt); // discontinued
    CHECK(k.companion_version("torch", ver("2.15.0.dev20260801+cu130"), "torchvision") == "0.30.0.dev20260801");
    CHECK(k.companion_version("torch", ver("2.99.0"), "torchvision") == std::nullopt);

    const Framework* t = k.framework("torch");
    CHECK(t->index_url("stable", "cu128").value() == "https://download.pytorch.org/whl/cu128");
    CHECK(t->index_url("nightly", "cu130").value() == "https://download.pytorch.org/whl/nightly/cu130");
    CHECK(t->index_url("test", "cu126", "https://mirror.example/pytorch/").value() ==
          "https://mirror.example/pytorch/test/cu126");
    CHECK(!t->index_url("beta", "cu128"));
    CHECK(k.framework("paddlepaddle")->index_url("stable", "cu129").value() ==
          "https://www.paddlepaddle.org.cn/packages/stable/cu129/");
    // The mirror a framework index was made from (apply --locked --mirror re-points from it).
    CHECK(t->mirror_of_index("https://mirror.example/pytorch/test/cu126", "test", "cu126") == "https://mirror.example/pytorch");
    CHECK(t->mirror_of_index("https://download.pytorch.org/whl/cu128", "stable", "cu128") == "https://download.pytorch.org/whl");
    CHECK(t->mirror_of_index("https://mirror.example/other/cu126", "test", "cu126").empty());
    CHECK(t->mirror_of_index("https://mirror.example/pytorch/test/cu126", "beta", "cu126").empty());
    // The set by name: main package, companions, then (asked) the optional ones, normalized.
    auto fam = t->family();
    REQUIRE(!fam.empty());
    CHECK(fam.front() == "torch");
    CHECK(std::find(fam.begin(), fam.end(), "torchvision") != fam.end());
    auto all = t->family(true);
    CHECK(all.size() == fam.size() + t->optional_companions.size());
  }

  TEST_CASE("other frameworks: arch data where known, unknown otherwise") {
    const auto& k = embedded();
    auto tf = k.variants_for("tensorflow", ver("2.19.0"));
    REQUIRE(tf.size() == 2); // cuda12 (and-cuda) and the cpu build
    const VariantBuild* tf_cuda = find_variant(tf, "cuda12");
    REQUIRE(tf_cuda);
    CHECK(tf_cuda->runs_on(cc("12.0")) == RunKind::jit); // Blackwell runs TF only through compute_90 PTX
    CHECK(tf_cuda->runs_on(cc("9.0")) == RunKind::native);
    REQUIRE(find_variant(tf, "cpu"));
    CHECK(find_variant(tf, "cpu")->kind == "cpu");
    CHECK(k.variants_for("tensorflow", ver("2.17.0")).empty());
    auto paddle = k.variants_for("paddlepaddle", ver("3.2.0"));
    const VariantBuild* cu129 = find_variant(paddle, "cu129");
    REQUIRE(cu129);
    CHECK(cu129->runs_on(cc("12.0")) == RunKind::unknown);
    CHECK(!cu129->verified);
    auto jax = k.variants_for("jax", ver("0.7.2"));
    CHECK(jax.size() == 3); // cuda12, cuda13, cpu
    REQUIRE(find_variant(paddle, "cu129"));
    CHECK(find_variant(k.variants_for("paddlepaddle", ver("3.3.1")), "cpu") != nullptr);
    // The variant's GPU package set (matrices/README.md, `variants`).
    const auto* jf = k.framework("jax");
    CHECK(jf->variant("cuda13")->extra == "cuda13");
    CHECK(jf->kernel_packages("cuda13") == std::vector<std::string>{"jax-cuda13-plugin", "jax-cuda13-pjrt"});
    CHECK(k.framework("tensorflow")->variant("cuda12")->extra == "and-cuda");
    CHECK(k.framework("paddlepaddle")->main_package_of("cpu") == "paddlepaddle");
    CHECK(k.framework("paddlepaddle")->main_package_of("cu126") == "paddlepaddle-gpu");
  }

  TEST_CASE("an override defines a whole framework (tinyfw, the GPU end-to-end fixture)") {
    auto k = Knowledge::load(std::string(ENVFIX_SOURCE_DIR) + "/tests/matrices/fixtures/tinyfw");
    REQUIRE_MESSAGE(k, (k ? "" : k.error().render()));
    const Framework* f = k->framework("tinyfw");
    REQUIRE(f);
    CHECK(f->companions == std::vector<std::string>{"tinyfw-vision"});
    CHECK(f->smoke.companions.at("tinyfw-vision").find("ops_check") != std::string::npos);
    CHECK(f->index_url("nightly", "cu130", "file:///srv/idx").value() == "file:///srv/idx/whl/nightly/cu130");
    auto v = k->variants_for("tinyfw", ver("1.0.0+cu130"));
    REQUIRE(v.size() == 2);
    CHECK(find_variant(v, "cu130")->runs_on(cc("9.0")) == RunKind::none); // sm_80 SASS only: broken on 9.0
    CHECK(find_variant(v, "cu129")->runs_on(cc("9.0")) == RunKind::jit);  // compute_80 PTX
    auto n = k->variants_for("tinyfw", ver("1.1.0.dev20261120+cu130"));
    REQUIRE(n.size() == 1);
    CHECK(n[0].runs_on(cc("9.0")) == RunKind::native);
    CHECK(k->companion_version("tinyfw", ver("1.1.0.dev20261120+cu130"), "tinyfw-vision") == "0.2.0.dev20261120");
    CHECK(k->companion_version("tinyfw", ver("1.0.0"), "tinyfw-vision") == "0.1.0");
    // The embedded data is still there.
    CHECK(k->framework("torch"));
  }

  TEST_CASE("an override adds tomorrow's release, or replaces one with override: true") {
    auto k = with_override({{"o.yaml", R"y(schema: 1
frameworks:
  torch:
    releases:
      - versions: ["2.13.1"]
        python: [cp313]
        source: "a user"
        variants:
          cu130:
            linux_x86_64: {sass: [sm_90, sm_120], ptx: [], confidence: verified, source: "get_arch_list()"}
      - versions: ["2.7.0"]
        override: true
        python: [cp312]
        source: "a user"
        variants:
          cu126:
            linux_x86_64: {sass: [sm_90], confidence: unverified, source: "guess"}
    coupling:
      - {version: "2.13.1", companions: {torchvision: "0.28.1"}, source: "a user"}
cuda_toolkits:
  "13.4":
    min_driver: {linux: "610.43"}
    minor_compat: {linux: "580"}
    sass: [sm_75, sm_80, sm_86, sm_90, sm_100, sm_120]
    confidence: verified
    source: "a user"
gpus:
  - {cc: "12.0", family: blackwell, names: ["Made Up 9000"], confidence: unverified, source: "a user"}
)y"}});
    REQUIRE_MESSAGE(k, (k ? "" : k.error().render()));
    CHECK(k->variants_for("torch", ver("2.13.1")).size() == 1);
    CHECK(k->companion_version("torch", ver("2.13.1"), "torchvision") == "0.28.1");
    auto v = k->variants_for("torch", ver("2.7.0"));
    REQUIRE(v.size() == 1);
    CHECK(v[0].variant == "cu126");
    CHECK(k->variants_for("torch", ver("2.7.1")).size() == 3); // its row-mate is untouched
    CHECK(k->min_driver({13, 4}) == "610.43");
    CHECK(k->min_driver({12, 8}) == "570.26");
    CHECK(k->gpu("Made Up 9000")->cc.to_string() == "12.0");
  }

  TEST_CASE("bad override: every problem at once, each with file:line:column and the key") {
    auto k = with_override({{"bad.yaml", R"y(schema: 1
frameworks:
  torch:
    releases:
      - versions: ["2.7.0"]
        python: [cp312]
        source: "dup"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_1200, sm_90], ptx: [], confidence: verified, source: "x"}
      - versions: ["9.9.9"]
        python: cp312
        colour: blue
        source: "x"
        variants:
          cu128:
            linux_x86_64: {sass: [sm_90], ptx: [compute_90], confidence: maybe, source: "x"}
)y"},
                            {"syntax.yaml", "schema: 1\ngpus:\n  - {cc: \"9.0\", names: [\"X\"]\n  - oops: [\n"}});
    REQUIRE(!k);
    const Error& e = k.error();
    CHECK(e.code == ErrorCode::invalid_input);
    std::string all = all_causes(e);
    CAPTURE(all);
    CHECK(e.causes.size() == 6);
    for (const auto& c : e.causes) CHECK_MESSAGE((has_location(c, "bad.yaml") || has_location(c, "syntax.yaml")), c);
    CHECK(
        all.find(
            "bad.yaml:10:35: frameworks.torch.releases[0].variants.cu128.linux_x86_64.sass[0]: unknown arch: invalid GPU arch 'sm_1200'") !=
        std::string::npos);
    CHECK(all.find(
              "bad.yaml:5:9: frameworks.torch.releases[0]: duplicate release 2.7.0 (already defined at embedded:torch.yaml:") !=
          std::string::npos);
    CHECK(all.find("bad.yaml:12:17: frameworks.torch.releases[1].python: expected a list, found a scalar") != std::string::npos);
    CHECK(all.find("bad.yaml:13:9: frameworks.torch.releases[1]: unknown key 'colour'") != std::string::npos);
    CHECK(
        all.find(
            "bad.yaml:17:74: frameworks.torch.releases[1].variants.cu128.linux_x86_64.confidence: unknown confidence 'maybe'") !=
        std::string::npos);
    CHECK(all.find("syntax.yaml:4:3: YAML syntax error: illegal block entry") != std::string::npos);
    CHECK(all.find("syntax.yaml:") != std::string::npos);
    CHECK(all.find("YAML syntax error") != std::string::npos);
    CHECK(e.message == "invalid matrices data: 6 problems");
  }

  TEST_CASE("cross-file invariants are enforced at load time") {
    auto k = with_override({{"x.yaml", R"y(schema: 1
frameworks:
  torch:
    variants:
      cu144: {cuda: "14.4"}
    releases:
      - versions: ["2.14.7"]
        channels: [beta]
        python: [cp313]
        source: "x"
        pypi_default: cu999
        variants:
          cu128:
            linux_x86_64: {sass: [sm_37, sm_120], ptx: [], confidence: verified, source: "x"}
          cu777:
            linux_x86_64: {sass: [], confidence: verified, source: "x"}
    coupling:
      - {version: "2.13.7", companions: {torchvision: "0.28.7", torchfoo: "1.0"}, source: "x"}
)y"}});
    REQUIRE(!k);
    std::string all = all_causes(k.error());
    CAPTURE(all);
    CHECK(all.find("unknown channel 'beta'") != std::string::npos);
    CHECK(all.find("variants.cu144: CUDA 14.4 has no cuda_toolkits row") == std::string::npos); // load stops before validate
    // Fix the load-time problem and the cross-file ones appear.
    auto k2 = with_override({{"x.yaml", R"y(schema: 1
frameworks:
  torch:
    variants:
      cu144: {cuda: "14.4"}
    releases:
      - versions: ["2.14.7"]
        python: [cp313]
        source: "x"
        pypi_default: cu999
        variants:
          cu128:
            linux_x86_64: {sass: [sm_37, sm_120], ptx: [], confidence: verified, source: "x"}
          cu777:
            linux_x86_64: {sass: [], confidence: verified, source: "x"}
    coupling:
      - {version: "2.13.7", companions: {torchvision: "0.28.7", torchfoo: "1.0"}, source: "x"}
)y"}});
    REQUIRE(!k2);
    all = all_causes(k2.error());
    CHECK(all.find("x.yaml:5:7: frameworks.torch.variants.cu144: CUDA 14.4 has no cuda_toolkits row") != std::string::npos);
    CHECK(all.find("pypi_default 'cu999' is not one of its variants") != std::string::npos);
    CHECK(all.find("cu128.linux_x86_64: CUDA 12.8 cannot build sm_37") != std::string::npos);
    CHECK(all.find("unknown variant 'cu777'") != std::string::npos);
    CHECK(all.find("'torchfoo' is not a companion of torch") != std::string::npos);
    CHECK(all.find("torch 2.13.7 is not a release of torch") != std::string::npos);
  }

  TEST_CASE("missing sources, wrong kinds and a framework without its essentials") {
    auto k = Knowledge::load_from({{"f.yaml", R"y(schema: 1
frameworks:
  half:
    companions: [half-vision]
    releases:
      - versions: ["1.0"]
        python: [cp312]
        variants:
          cpu:
            linux_x86_64: {sass: [compute_90], confidence: verified}
)y"}});
    REQUIRE(!k);
    std::string all = all_causes(k.error());
    CAPTURE(all);
    CHECK(all.find("releases[0]: missing key 'source'") != std::string::npos);
    CHECK(all.find("linux_x86_64: missing key 'source'") != std::string::npos);
    CHECK(all.find("'compute_90' is a ptx target; this list takes sass targets") != std::string::npos);
    // Without load-time problems, the missing framework essentials are named.
    auto k2 = Knowledge::load_from({{"f.yaml", "schema: 1\nframeworks:\n  half:\n    companions: [half-vision]\n"}});
    REQUIRE(!k2);
    all = all_causes(k2.error());
    for (const char* s :
         {"missing key 'main_package'", "missing key 'default_mirror'", "missing key 'channels'", "missing key 'variants'",
          "no 'releases'", "'smoke' needs step_a and step_b", "no check for companion 'half-vision'"})
      CHECK_MESSAGE(all.find(s) != std::string::npos, s);
    CHECK(all.find("f.yaml:3:3: frameworks.half") != std::string::npos);
  }

  TEST_CASE("smoke.cpu: the CPU step and companion checks load; unknown keys and stray companions are errors") {
    const auto& torch = *embedded().framework("torch");
    CHECK(torch.smoke.cpu.find("torch.randn(256, 256)") != std::string::npos);
    CHECK(torch.smoke.cpu_companions.at("torchvision").find("nms") != std::string::npos);
    CHECK(torch.smoke.cpu_companions.size() == torch.smoke.companions.size());
    auto fw = [](const std::string& cpu) {
      return "schema: 1\nframeworks:\n  f:\n    main_package: f\n    companions: [f-vision]\n    default_mirror: \"https://x\"\n"
             "    channels: {stable: \"{mirror}/{variant}\"}\n    source: s\n    variants: {cpu: {kind: cpu}}\n"
             "    smoke:\n      step_a: a\n      step_b: b\n      companions: {f-vision: v}\n" +
             cpu +
             "    releases:\n      - versions: [\"1.0\"]\n        python: [cp312]\n        source: s\n"
             "        variants: {cpu: {linux_x86_64: {confidence: verified, source: s}}}\n";
    };
    auto ok = Knowledge::load_from({{"f.yaml", fw("      cpu: {step: c, companions: {f-vision: cv}}\n")}});
    REQUIRE_MESSAGE(ok, (ok ? "" : all_causes(ok.error())));
    CHECK(ok->framework("f")->smoke.cpu == "c");
    CHECK(ok->framework("f")->smoke.cpu_companions.at("f-vision") == "cv");
    auto none = Knowledge::load_from({{"f.yaml", fw("")}});
    REQUIRE(none);
    CHECK(none->framework("f")->smoke.cpu.empty());
    auto stray = Knowledge::load_from({{"f.yaml", fw("      cpu: {step: c, companions: {g-audio: x}}\n")}});
    REQUIRE(!stray);
    CHECK(all_causes(stray.error()).find("smoke.cpu.companions: 'g-audio' is not a companion of f") != std::string::npos);
    auto no_step = Knowledge::load_from({{"f.yaml", fw("      cpu: {companions: {f-vision: cv}}\n")}});
    REQUIRE(!no_step);
    CHECK(all_causes(no_step.error()).find("companion checks need a 'step'") != std::string::npos);
    auto typo = Knowledge::load_from({{"f.yaml", fw("      cpu: {stepp: c}\n")}});
    REQUIRE(!typo);
    CHECK(all_causes(typo.error()).find("stepp") != std::string::npos);
  }

  TEST_CASE("load(dir): a corrupt or missing override never falls back silently") {
    auto bad = Knowledge::load(std::string(ENVFIX_SOURCE_DIR) + "/tests/matrices/fixtures/bad");
    REQUIRE(!bad);
    CHECK(bad.error().code == ErrorCode::invalid_input);
    CHECK(bad.error().causes.size() >= 4);
    auto missing = Knowledge::load("/nonexistent/envfix-matrices");
    REQUIRE(!missing);
    CHECK(missing.error().code == ErrorCode::not_found);
    CHECK(!Knowledge::load_from({{"empty.yaml", ""}}));
    CHECK(!Knowledge::load_from({{"noschema.yaml", "gpus: []\n"}}));
    CHECK(!Knowledge::load_from({{"schema2.yaml", "schema: 2\n"}}));
    CHECK(Knowledge::load_from({{"min.yaml", "schema: 1\n"}}).has_value());
  }

  // The 2026-12 corrections (matrices/README.md, Data): each row as the primary sources give it.
  TEST_CASE("2026-12 corrections: torch 2.14.0 is a stable release with cu126/cu130/cu132") {
    const auto& k = embedded();
    const Framework* t = k.framework("torch");
    const Release* r = t->release(ver("2.14.0"));
    REQUIRE(r);
    CHECK(r->channels == std::vector<std::string>{"stable"});
    CHECK(r->pypi_default == "cu130");
    CHECK(r->source.find("googlecolab/colabtools#6093") != std::string::npos);
    std::vector<std::string> vs;
    for (const auto& b : k.variants_for("torch", ver("2.14.0"))) {
      vs.push_back(b.variant);
      CHECK_MESSAGE(b.ptx->empty(), b.variant); // 2.14 strips the PTX 2.13.0 shipped by accident
      CHECK(b.confidence == Confidence::secondary);
      CHECK(!b.verified); // checked after download
    }
    CHECK(vs == std::vector<std::string>{"cu126", "cu130", "cu132"});
    CHECK(names(find_variant(k.variants_for("torch", ver("2.14.0")), "cu126")->sass) ==
          std::vector<std::string>{"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"});
    CHECK(find_variant(k.variants_for("torch", ver("2.14.0"), "linux_aarch64"), "cu130") != nullptr);
    CHECK(k.companion_version("torch", ver("2.14.0"), "torchvision") == "0.29.0");
  }

  TEST_CASE("2026-12 corrections: cu129 of 2.9.x, 2.10.0, 2.11.0 (Linux x86_64); none for 2.12.x; 2.13.0 secondary") {
    const auto& k = embedded();
    for (const char* v : {"2.9.0", "2.9.1", "2.10.0", "2.11.0"}) {
      CAPTURE(v);
      auto builds = k.variants_for("torch", ver(v));
      const VariantBuild* b = find_variant(builds, "cu129");
      REQUIRE(b);
      CHECK(!b->verified);
      CHECK(b->source.find("pytorch/") != std::string::npos);
    }
    // 2.9/2.10: the 12.9 build-script list, PTX unverified; 2.11: archs unknown.
    CHECK(names(find_variant(k.variants_for("torch", ver("2.10.0")), "cu129")->sass) ==
          std::vector<std::string>{"sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"});
    CHECK(find_variant(k.variants_for("torch", ver("2.11.0")), "cu129")->runs_on(cc("9.0")) == RunKind::unknown);
    // Windows cu129 only for 2.9.0.
    CHECK(find_variant(k.variants_for("torch", ver("2.9.0"), "windows_x86_64"), "cu129") != nullptr);
    CHECK(find_variant(k.variants_for("torch", ver("2.9.1"), "windows_x86_64"), "cu129") == nullptr);
    for (const char* v : {"2.12.0", "2.12.1"}) {
      CAPTURE(v);
      CHECK(find_variant(k.variants_for("torch", ver(v)), "cu129") == nullptr);
      CHECK(find_variant(k.variants_for("torch", ver(v), "linux_aarch64"), "cu129") == nullptr);
    }
    auto b213s = k.variants_for("torch", ver("2.13.0"));
    const VariantBuild* b213 = find_variant(b213s, "cu129");
    REQUIRE(b213);
    CHECK(b213->confidence == Confidence::secondary);
    // 2.9 cu130's PTX comes from RELEASE.md only (a plan): unverified.
    CHECK(find_variant(k.variants_for("torch", ver("2.9.0")), "cu130")->confidence == Confidence::unverified);
  }

  TEST_CASE("2026-12 corrections: Python tags (2.11.0 cp313t; 2.12.0 has it, 2.12.1 not)") {
    const Framework* t = embedded().framework("torch");
    auto has = [&](const char* v, const char* tag) {
      const auto& py = t->release(ver(v))->python;
      return std::find(py.begin(), py.end(), tag) != py.end();
    };
    CHECK(has("2.11.0", "cp313t"));
    CHECK(has("2.12.0", "cp313t"));
    CHECK(!has("2.12.1", "cp313t"));
    CHECK(has("2.12.1", "cp314t"));
  }

  TEST_CASE("free-threaded Python tags: cp313t/cp314t rows load; a t before 3.13 or on PyPy is refused with its location") {
    // Every free-threaded tag of the embedded data is CPython 3.13 or later, and each release that has
    // one has its GIL build too.
    for (const auto& f : embedded().frameworks())
      for (const auto& r : f.releases)
        for (const auto& t : r.python)
          if (t.ends_with("t")) {
            CAPTURE(f.name);
            CAPTURE(t);
            CHECK(t.starts_with("cp3"));
            CHECK(std::stoi(t.substr(3, t.size() - 4)) >= 13);
            CHECK(std::find(r.python.begin(), r.python.end(), t.substr(0, t.size() - 1)) != r.python.end());
          }
    auto fw = [](const std::string& tags) {
      return Knowledge::load_from({{"f.yaml", R"y(schema: 1
frameworks:
  ftfw:
    main_package: ftfw
    default_mirror: "https://ftfw.invalid"
    channels: {stable: "{mirror}/whl/{variant}"}
    source: "test"
    variants: {cpu: {kind: cpu}}
    smoke: {step_a: "import ftfw", step_b: "import ftfw"}
    releases:
      - versions: ["1.0"]
        python: )y" + tags + R"y(
        source: "test"
        variants:
          cpu:
            linux_x86_64: {sass: [], ptx: [], confidence: verified, source: "test"}
)y"}});
    };
    auto ok = fw("[cp313, cp313t, cp314, cp314t]");
    REQUIRE_MESSAGE(ok, (ok ? "" : all_causes(ok.error())));
    CHECK(ok->framework("ftfw")->releases[0].python == std::vector<std::string>{"cp313", "cp313t", "cp314", "cp314t"});
    auto bad = fw("[cp312t, pp310t, cp313x]");
    REQUIRE(!bad);
    auto all = all_causes(bad.error());
    CAPTURE(all);
    CHECK(all.find("f.yaml:12:18: frameworks.ftfw.releases[0].python[0]: invalid Python tag 'cp312t': free-threaded builds") !=
          std::string::npos);
    CHECK(all.find("python[1]: invalid Python tag 'pp310t'") != std::string::npos);
    CHECK(all.find("python[2]: invalid Python tag 'cp313x'") != std::string::npos);
  }

  TEST_CASE("2026-12 corrections: the nightly has cu134 (CUDA 13.4), judged by the 13.x floor") {
    const auto& k = embedded();
    auto nightly = k.variants_for("torch", ver("2.15.0.dev20261120"));
    const VariantBuild* b = find_variant(nightly, "cu134");
    REQUIRE(b);
    CHECK(b->cuda == CudaVersion{13, 4});
    CHECK(b->channels == std::vector<std::string>{"nightly"});
    CHECK(!b->verified);
    CHECK(b->runs_on(cc("12.0")) == RunKind::native);
    // 13.4's GA driver is not confirmed: the 13.x minor-version floor stands in, marked inexact.
    CHECK(k.min_driver({13, 4}) == std::nullopt);
    auto floor = k.driver_floor({13, 4});
    REQUIRE(floor);
    CHECK(floor->version == "580");
    CHECK(!floor->exact);
    CHECK(floor->toolkit_known);
    CHECK(k.driver_supports("580.95.05", {13, 4}, false));
    CHECK(!k.driver_supports("575.57.08", {13, 4}));
  }

  TEST_CASE("2026-12 corrections: CUDA 13.1 Update 1, 13.2 secondary, 13.3, 13.4, 13.5") {
    const auto& k = embedded();
    const CudaToolkit* t131 = k.toolkit({13, 1});
    REQUIRE(t131);
    REQUIRE(t131->updates.contains("13.1.1"));
    CHECK(t131->updates.at("13.1.1").first == "590.48.01");
    REQUIRE(k.toolkit({13, 2}));
    CHECK(k.toolkit({13, 2})->confidence == Confidence::secondary);
    CHECK(k.min_driver({13, 2}) == "595.45.04");
    CHECK(k.toolkit({13, 2})->updates.at("13.2.1").first == "595.58.03");
    CHECK(k.min_driver({13, 3}) == "610.43.02");
    CHECK(k.toolkit({13, 3})->confidence == Confidence::secondary);
    for (CudaVersion v : {CudaVersion{13, 4}, CudaVersion{13, 5}}) {
      CAPTURE(v.to_string());
      REQUIRE(k.toolkit(v));
      CHECK(k.toolkit(v)->confidence == Confidence::unverified);
      CHECK(k.minor_compat_driver(v) == "580");
    }
    // Minor-version floors per major.
    CHECK(k.minor_compat_driver({11, 8}) == "450.80.02");
    CHECK(k.minor_compat_driver({11, 8}, "windows") == "452.39");
    CHECK(k.minor_compat_driver({12, 6}) == "525.60.13");
    CHECK(k.minor_compat_driver({13, 0}) == "580");
  }

  TEST_CASE("driver floors of toolkits the matrices do not know: the major's minor-version floor") {
    const auto& k = embedded();
    auto f = k.driver_floor({13, 6});
    REQUIRE(f);
    CHECK(f->version == "580");
    CHECK(!f->exact);
    CHECK(!f->toolkit_known);
    CHECK(k.driver_floor({12, 7})->version == "525.60.13");
    CHECK(k.driver_floor({12, 8})->exact);
    CHECK(k.driver_floor({12, 8})->version == "570.26");
    CHECK(!k.driver_floor({14, 0})); // nothing of that major is known
    CHECK(k.driver_supports("580.65.06", {13, 6}, false));
    CHECK(!k.driver_supports("570.26", {13, 6}));
  }

  TEST_CASE("understand_variant: known rows, and names the matrices do not list") {
    const auto& k = embedded();
    auto known = k.understand_variant("torch", "cu128");
    REQUIRE(known);
    CHECK(known->known);
    auto cu136 = k.understand_variant("torch", "cu136");
    REQUIRE(cu136);
    CHECK(!cu136->known);
    CHECK(cu136->variant.kind == "cuda");
    CHECK(cu136->variant.cuda == CudaVersion{13, 6});
    CHECK(k.understand_variant("torch", "cpu")->variant.kind == "cpu");
    CHECK(!k.understand_variant("torch", "banana"));
    CHECK(!k.understand_variant("torch", "cu"));
  }

  TEST_CASE("2026-12 corrections: TensorFlow 2.20 has cp313; PaddlePaddle without cp38, with 3.2.1, 3.3.x and cu130") {
    const auto& k = embedded();
    const Framework* tf = k.framework("tensorflow");
    auto py = [](const Framework* f, const char* v) { return f->release(ver(v))->python; };
    auto has = [](const std::vector<std::string>& l, const char* x) { return std::find(l.begin(), l.end(), x) != l.end(); };
    CHECK(has(py(tf, "2.20.0"), "cp313"));
    CHECK(!has(py(tf, "2.19.0"), "cp313"));
    CHECK(tf->release(ver("2.20.0"))->source.find("tensorflow/tensorflow#99639") != std::string::npos);
    const Framework* pd = k.framework("paddlepaddle");
    CHECK(has(py(pd, "3.0.0"), "cp38"));
    for (const char* v : {"3.1.0", "3.2.0", "3.2.1", "3.3.0", "3.3.1"}) {
      CAPTURE(v);
      REQUIRE(pd->release(ver(v)));
      CHECK(!has(py(pd, v), "cp38"));
    }
    REQUIRE(pd->variant("cu130"));
    CHECK(pd->variant("cu130")->cuda == CudaVersion{13, 0});
    CHECK(find_variant(k.variants_for("paddlepaddle", ver("3.3.1")), "cu130") != nullptr);
    CHECK(pd->index_url("stable", "cu130").value() == "https://www.paddlepaddle.org.cn/packages/stable/cu130/");
  }

  TEST_CASE("first toolkit with code for each GPU: its own arch wins (sm_121 → 12.9), never the table's start") {
    const auto& k = embedded();
    auto first = [&](const char* c) { return k.first_toolkit_for(cc(c)); };
    CHECK(first("12.1").toolkit->version == CudaVersion{12, 9});
    CHECK(first("12.1").own_arch);
    CHECK(first("12.0").toolkit->version == CudaVersion{12, 8});
    CHECK(first("10.3").toolkit->version == CudaVersion{12, 9});
    CHECK(first("10.0").toolkit->version == CudaVersion{12, 8});
    CHECK(first("11.0").toolkit->version == CudaVersion{13, 0}); // sm_110 (sm_101 before 13.0)
    CHECK(first("8.8").toolkit->version == CudaVersion{13, 0});
    CHECK(first("9.0").toolkit->version == CudaVersion{11, 8});
    CHECK(first("8.9").toolkit->version == CudaVersion{11, 8});
    // sm_61 is older than the table: the answer says so instead of naming 11.6 as "the first".
    CHECK(first("6.1").oldest_listed);
    CHECK(!first("9.0").oldest_listed);
    // Every GPU in gpus.yaml: the chosen toolkit targets its own arch where any toolkit does, and no
    // older toolkit targets it.
    for (const auto& g : k.gpus()) {
      CAPTURE(g.name);
      auto f = k.first_toolkit_for(g.cc);
      REQUIRE(f.toolkit);
      GpuArch own{GpuArch::Kind::sass, g.cc.major, g.cc.minor};
      bool any_own =
          std::any_of(k.toolkits().begin(), k.toolkits().end(), [&](const CudaToolkit& t) { return t.can_target(own); });
      CHECK(f.own_arch == any_own);
      for (const auto& t : k.toolkits())
        if (t.version < f.toolkit->version) CHECK_MESSAGE(!t.can_target(own), t.version.to_string());
    }
  }

  TEST_CASE("GPU names as people type them; nvidia-smi's product strings keep working") {
    const auto& k = embedded();
    struct Row {
      const char* query;
      const char* cc;
    };
    for (auto r : {Row{"Jetson Thor", "11.0"},
                   Row{"Thor", "11.0"},
                   Row{"Jetson AGX Thor", "11.0"},
                   Row{"NVIDIA Jetson T5000", "11.0"},
                   Row{"rtx5090", "12.0"},
                   Row{"RTX-5090", "12.0"},
                   Row{"5090", "12.0"},
                   Row{"GTX1080", "6.1"},
                   Row{"1080 Ti", "6.1"},
                   Row{"Jetson Orin", "8.7"},
                   Row{"GB10", "12.1"},
                   Row{"NVIDIA GB10", "12.1"},
                   Row{"NVIDIA H100 80GB HBM3", "9.0"},
                   Row{"NVIDIA H100 PCIe", "9.0"},
                   Row{"NVIDIA A100-SXM4-40GB", "8.0"},
                   Row{"Tesla V100-PCIE-32GB", "7.0"},
                   Row{"NVIDIA GeForce RTX 4090", "8.9"},
                   Row{"NVIDIA B200", "10.0"},
                   Row{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"},
                   Row{"Tesla P100-PCIE-16GB", "6.0"}}) {
      CAPTURE(r.query);
      auto g = k.gpu(r.query);
      REQUIRE(g);
      CHECK(g->cc.to_string() == r.cc);
    }
    // Issue 36 (6): the product named, not a sibling whose entry shares the alias "1080 Ti".
    CHECK(k.gpu("1080")->name == "GeForce GTX 1080");
    CHECK(k.gpu("1080 Ti")->name == "GeForce GTX 1080 Ti");
    CHECK(k.gpu("5090")->name.find("5090") != std::string::npos);
    CHECK(!k.gpu("6000"));   // RTX PRO 6000 (12.0), Quadro RTX 6000 (7.5), RTX 6000 Ada (8.9): ambiguous
    CHECK(!k.gpu("Jetson")); // one word without a number names no product
    CHECK(!k.gpu("RTX 9999"));
    CHECK(!k.gpu("sm_61")); // an arch is not a product name (the caller parses it)
  }

  TEST_CASE("legacy ladder: 2.15 drops cu126, so 2.14.x+cu126 is the last release for sm_50..sm_70") {
    const auto& k = embedded();
    for (const char* c : {"5.0", "6.0", "6.1", "7.0"}) {
      CAPTURE(c);
      const SupportEnd* e = k.support_end("torch", cc(c));
      REQUIRE(e);
      CHECK(e->from == ver("2.15.0"));
      CHECK(e->variant == "cu126");
      CHECK(e->source.find("pytorch/pytorch#190385") != std::string::npos);
      auto last = k.last_release_for("torch", cc(c));
      REQUIRE(last);
      CHECK(last->version == ver("2.14.1"));
      CHECK(last->variant == "cu126");
      CHECK(last->end == e);
    }
    CHECK(k.support_end("torch", cc("7.5")) == nullptr);
    auto t4 = k.last_release_for("torch", cc("7.5"));
    REQUIRE(t4);
    CHECK(t4->end == nullptr);
    // A 2.15.1 row added by an override has no build for sm_61: 2.14.1 stays the last one.
    auto over = with_override({{"o.yaml", R"(schema: 1
frameworks:
  torch:
    releases:
      - versions: ["2.15.1"]
        python: [cp312]
        source: "test"
        variants:
          cu130:
            linux_x86_64: {sass: [sm_75, sm_80, sm_90, sm_100, sm_120], ptx: [], confidence: unverified, source: "test"}
)"}});
    REQUIRE(over);
    CHECK(over->last_release_for("torch", cc("6.1"))->version == ver("2.14.1"));
    CHECK(over->last_release_for("torch", cc("9.0"))->version == ver("2.15.1"));
  }

  TEST_CASE("support_ends: bad rows are reported with their location") {
    auto bad = with_override({{"se.yaml", R"(schema: 1
frameworks:
  torch:
    support_ends:
      - {from: "2.16.0", below: "sm_banana", variant: cu999, confidence: secondary, source: "x"}
      - {below: "7.5", source: "x"}
)"}});
    REQUIRE(!bad);
    std::string all = all_causes(bad.error());
    CHECK(all.find("invalid compute capability 'sm_banana'") != std::string::npos);
    CHECK(all.find("missing key 'from'") != std::string::npos);
    CHECK(all.find("missing key 'confidence'") != std::string::npos);
    CHECK(has_location(all, "se.yaml"));
  }

  TEST_CASE("a CUDA toolkit row may give only its minor-compatibility floor, but not nothing") {
    auto ok = with_override({{"t.yaml", "schema: 1\ncuda_toolkits:\n  \"13.6\":\n    minor_compat: {linux: \"580\"}\n"
                                        "    sass: [sm_90]\n    confidence: unverified\n    source: \"x\"\n"}});
    REQUIRE(ok);
    CHECK(!ok->driver_floor({13, 6})->exact);
    auto bad = with_override({{"t.yaml", "schema: 1\ncuda_toolkits:\n  \"13.6\":\n    sass: [sm_90]\n"
                                         "    confidence: unverified\n    source: \"x\"\n"}});
    REQUIRE(!bad);
    CHECK(all_causes(bad.error()).find("missing key 'min_driver'") != std::string::npos);
  }

} // TEST_SUITE

TEST_CASE("compiled knowledge: load_embedded() reads the build's JSON, equal row by row to the YAML" *
          doctest::test_suite("unit/matrices/matrices")) {
  auto from_yaml = Knowledge::load_from(Knowledge::embedded_files());
  REQUIRE_MESSAGE(from_yaml, (from_yaml ? "" : from_yaml.error().render()));
  auto compiled = knowledge_from_json(Knowledge::compiled_json());
  REQUIRE_MESSAGE(compiled, (compiled ? "" : compiled.error().render()));
  // Member-wise equality (every row type's operator==): a member the codec left out differs here.
  CHECK(compiled->frameworks() == from_yaml->frameworks());
  CHECK(compiled->toolkits() == from_yaml->toolkits());
  CHECK(compiled->gpus() == from_yaml->gpus());
  CHECK(embedded().frameworks() == from_yaml->frameworks());
  REQUIRE_FALSE(from_yaml->frameworks().empty());
  // Locations survive: where a row came from, as the YAML loader saw it.
  const auto& torch = *compiled->framework("torch");
  CHECK(torch.where.file == "embedded:torch.yaml");
  CHECK(torch.where.line > 0);
  CHECK(knowledge_to_json(*compiled) == std::string(Knowledge::compiled_json()));
}

TEST_CASE("compiled knowledge: bad input is an error naming it, never a half-read knowledge" *
          doctest::test_suite("unit/matrices/matrices")) {
  for (const char* bad : {"", "{", "[]", R"({"compiled":2})", R"({"compiled":1,"frameworks":[],"toolkits":[]})",
                          R"({"compiled":1,"frameworks":[{"name":1}],"toolkits":[],"gpus":[]})",
                          R"({"compiled":1,"frameworks":[],"toolkits":[{"version":"twelve"}],"gpus":[]})"}) {
    auto k = knowledge_from_json(bad);
    REQUIRE_FALSE(k);
    CHECK(k.error().message.find("compiled matrices data") != std::string::npos);
    CHECK(!k.error().hint.empty());
  }
}
