// Variant discovery (resolver/discovery.hpp) and the legacy-ladder note (last_release_note), read
// with the embedded matrices as the CLI does (resolver/knowledge_adapter.hpp).
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "resolver/discovery.hpp"
#include "resolver/knowledge_adapter.hpp"
#include "resolver/memory_provider.hpp"
#include "resolver/source_build.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace resolver_discovery_test {

using namespace envfix;
using namespace envfix::resolver;

namespace {
const matrices::Knowledge& embedded() {
  static const matrices::Knowledge k = *matrices::Knowledge::load_embedded();
  return k;
}
bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }
} // namespace

TEST_SUITE("unit/resolver/discovery") {

  TEST_CASE("discovery sources: each channel's aggregate index, from the matrices' templates and --mirror") {
    auto src = discovery_sources(embedded(), "torch");
    std::map<std::string, std::string> agg;
    for (const auto& s : src) agg[s.channel] = s.aggregate_url;
    CHECK(agg["stable"] == "https://download.pytorch.org/whl");
    CHECK(agg["test"] == "https://download.pytorch.org/whl/test");
    CHECK(agg["nightly"] == "https://download.pytorch.org/whl/nightly");
    for (const auto& s : src)
      if (s.channel == "nightly") CHECK(s.index_url("cu136") == "https://download.pytorch.org/whl/nightly/cu136");
    auto mirrored = discovery_sources(embedded(), "torch", "https://mirror.example/pt/");
    for (const auto& s : mirrored) CHECK(s.aggregate_url.starts_with("https://mirror.example/pt"));
    // TensorFlow's one index has no per-variant directories: nothing to discover.
    CHECK(discovery_sources(embedded(), "tensorflow").empty());
  }

  TEST_CASE("framework_path: --index-url keeps the framework's checks only where the request is the framework's") {
    const auto* torch = embedded().framework("torch");
    REQUIRE(torch);
    auto req = [](std::vector<std::string> names) {
      std::vector<specs::Requirement> out;
      for (const auto& n : names) out.push_back(*specs::Requirement::parse(n));
      return out;
    };
    // No --index-url/--find-links: always the framework's way.
    CHECK(framework_path({.gpus = false}, req({"numpy"}), torch));
    // --index-url, no --framework: an empty request (the installed set), or a framework package on a GPU host.
    CHECK(framework_path({.index_url = true}, {}, torch));
    CHECK(framework_path({.index_url = true, .gpus = true}, req({"torchvision"}), torch));
    CHECK_FALSE(framework_path({.index_url = true, .gpus = false}, req({"torch"}), torch));
    CHECK_FALSE(framework_path({.index_url = true, .gpus = true}, req({"numpy"}), torch));
    // --framework given: the framework's way whatever the request; no framework known: never.
    CHECK(framework_path({.framework_asked = true, .index_url = true}, req({"numpy"}), torch));
    CHECK_FALSE(framework_path({.framework_asked = true, .index_url = true}, req({"torch"}), nullptr));
    // --find-links alone: the plain resolver unless --framework.
    CHECK_FALSE(framework_path({.find_links = true, .gpus = true}, req({"torch"}), torch));
  }

  TEST_CASE("variant names read with the matrices: unknown CUDA variants, known ones without a row, history and ROCm skipped") {
    auto describe = variant_describer(embedded(), "torch");
    auto cu136 = describe("nightly", "cu136");
    REQUIRE(cu136);
    CHECK(cu136->cuda == specs::CudaVersion{13, 6});
    CHECK(contains(cu136->note.text, "variant cu136 is not in the matrices: CUDA 13.6 understood from its name"));
    CHECK(contains(cu136->note.text,
                   "driver floor 580 is only the 13.x minor-version-compatibility floor (CUDA 13.6 is not in cuda.yaml)"));
    CHECK(contains(cu136->note.text, "unverified"));
    // cu134 is declared (a nightly variant) but no test-channel row lists it; 13.4 has no confirmed GA driver.
    auto cu134 = describe("test", "cu134");
    REQUIRE(cu134);
    CHECK(contains(cu134->note.text, "variant cu134 is in the matrices but no test release row lists it"));
    CHECK(contains(cu134->note.text, "CUDA 13.4 has no confirmed driver in cuda.yaml"));
    auto cu128 = describe("test", "cu128");
    REQUIRE(cu128);
    CHECK(contains(cu128->note.text, "driver ≥ 570.26 (CUDA 12.8 in cuda.yaml)"));
    CHECK(!describe("stable", "cu92")); // older than every declared variant: history, not news
    CHECK(!describe("stable", "rocm7.3"));
    CHECK(!describe("stable", "cu124_full"));
  }

  TEST_CASE("discover_indexes adds what the aggregate page offers and the spec lacks, once") {
    auto spec = *framework_spec_from(embedded(), "torch");
    std::size_t before = spec.indexes.size();
    MemoryProvider nightly("https://download.pytorch.org/whl/nightly");
    nightly.add_wheel("torch-2.16.0.dev20261201+cu136-cp312-cp312-manylinux_2_28_x86_64.whl");
    nightly.add_wheel("torch-2.15.0.dev20261120+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"); // listed already
    nightly.add_wheel("torch-2.16.0.dev20261201+rocm7.3-cp312-cp312-manylinux_2_28_x86_64.whl");
    MemoryProvider empty("https://download.pytorch.org/whl");
    auto provider_for = [&](const std::string& url) -> CandidateProvider& { return url.ends_with("/nightly") ? nightly : empty; };
    auto added =
        discover_indexes(spec, discovery_sources(embedded(), "torch"), variant_describer(embedded(), "torch"), provider_for);
    REQUIRE(added.size() == 1);
    CHECK(added[0].channel == "nightly");
    CHECK(added[0].variant == "cu136");
    CHECK(added[0].cuda == specs::CudaVersion{13, 6});
    CHECK(added[0].url == "https://download.pytorch.org/whl/nightly/cu136");
    CHECK(!added[0].discovered.empty());
    CHECK(spec.indexes.size() == before + 1);
    CHECK(discover_indexes(spec, discovery_sources(embedded(), "torch"), variant_describer(embedded(), "torch"), provider_for)
              .empty());
  }

  TEST_CASE("discover_indexes tries an explicit variant name on every channel that lacks it") {
    auto spec = *framework_spec_from(embedded(), "torch");
    MemoryProvider empty("nothing");
    auto provider_for = [&](const std::string&) -> CandidateProvider& { return empty; };
    auto added = discover_indexes(spec, discovery_sources(embedded(), "torch"), variant_describer(embedded(), "torch"),
                                  provider_for, {"cu136"});
    std::set<std::string> channels;
    for (const auto& i : added) {
      CHECK(i.variant == "cu136");
      channels.insert(i.channel);
    }
    CHECK(channels == std::set<std::string>{"stable", "test", "nightly"});
    // cu134 is listed for the nightly and the test channel (2.16.0) already: tried on stable only.
    auto spec2 = *framework_spec_from(embedded(), "torch");
    auto added2 = discover_indexes(spec2, discovery_sources(embedded(), "torch"), variant_describer(embedded(), "torch"),
                                   provider_for, {"cu134"});
    CHECK(added2.size() == 1);
    for (const auto& i : added2) CHECK(i.channel == "stable");
  }

  TEST_CASE("last_release_note: the last release for a GPU a later release dropped; neutral when pinned") {
    auto spec = *framework_spec_from(embedded(), "torch");
    REQUIRE(spec.support_ends.size() == 1);
    auto v = *specs::Version::parse("2.14.0+cu126");
    auto sm61 = *specs::ComputeCapability::parse("6.1");
    auto sm90 = *specs::ComputeCapability::parse("9.0");
    auto note = last_release_note(spec, v, {sm61, sm90}, true).text;
    CHECK(note.starts_with("torch 2.14.0+cu126 is the last release with code for sm_61: torch 2.15.0 and later dropped cu126"));
    CHECK(contains(note, "pytorch/pytorch#190385"));
    CHECK(!contains(note, "sm_90"));
    CHECK(last_release_note(spec, v, {sm61}, false)
              .text.starts_with("torch 2.14.0+cu126 has code for sm_61; torch 2.15.0 and later"));
    CHECK(last_release_note(spec, v, {sm90}, true).empty());
    CHECK(last_release_note(spec, *specs::Version::parse("2.15.0.dev20261120"), {sm61}, true).empty());
  }

} // TEST_SUITE

TEST_SUITE("unit/resolver/discovery") {

  // Issue 60, point 2: the extension's name is installed METADATA, which a hostile package writes.
  TEST_CASE("security: an extension recipe pasted into a shell runs no code from the package's name") {
    const auto work = util::make_temp_dir({}, "envfix-recipe").value();
    const std::string name = "x'$(touch${IFS}PWNED)'y`touch${IFS}PWNED2`";
    const auto recipe =
        extension_build_recipe({name, *specs::Version::parse("1.0"), "torch", std::nullopt, {{12, 0}}, std::nullopt}).text;
    // The command the user pastes, with pip replaced by printf: each word it would get, one a line.
    const auto from = recipe.find("TORCH_CUDA_ARCH_LIST=");
    const auto to = recipe.find(" (or, in its source checkout");
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    std::string cmd = recipe.substr(from, to - from);
    const std::string pip = "python -m pip install";
    REQUIRE(cmd.find(pip) != std::string::npos);
    cmd.replace(cmd.find(pip), pip.size(), "printf '%s\\n'");
    auto r = util::run_process({"sh", "-c", cmd}, {.cwd = work});
    REQUIRE(r);
    CHECK(r->ok());
    CHECK_FALSE(std::filesystem::exists(work / "PWNED"));
    CHECK_FALSE(std::filesystem::exists(work / "PWNED2"));
    CHECK(r->out == "--no-build-isolation\n--no-binary\n" + name + "\n" + name + "==1.0\n");
    std::filesystem::remove_all(work);
  }

  // Fix C must run as printed (issue 33, item 5): torch has no sdist, so a checkout at the release tag.
  TEST_CASE("source-build recipes: a checkout at the release tag, the arch setting, the toolkit the GPU needs") {
    auto spec = *framework_spec_from(embedded(), "torch", "", "linux_x86_64");
    REQUIRE(spec.first_toolkit);
    auto t = spec.first_toolkit(specs::ComputeCapability{12, 0});
    REQUIRE(t);
    SourceBuild b{"torch", *specs::Version::parse("2.7.1+cu126"), {{12, 0}, {8, 6}}, t};
    auto torch = source_build_recipe(b).text;
    CHECK(contains(torch, "git clone --branch v2.7.1 --recursive https://github.com/pytorch/pytorch"));
    CHECK(contains(torch, "TORCH_CUDA_ARCH_LIST=\"12.0;8.6\""));
    CHECK(contains(torch, fmt::format("CUDA toolkit ≥ {}", t->to_string())));
    CHECK(!contains(torch, "--no-binary"));
    b.framework = "jax";
    b.version = *specs::Version::parse("0.7.2");
    CHECK(contains(source_build_recipe(b).text, "--branch jax-v0.7.2"));
    CHECK(contains(source_build_recipe(b).text, "--cuda_compute_capabilities=sm_120,sm_86"));
    b.framework = "paddlepaddle";
    CHECK(contains(source_build_recipe(b).text, "-DCUDA_ARCH_BIN=\"120;86\""));
    b.version.reset();
    CHECK(contains(source_build_recipe(b).text, "<the release tag>"));
  }

} // TEST_SUITE

} // namespace resolver_discovery_test
