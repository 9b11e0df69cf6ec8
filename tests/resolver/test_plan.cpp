// make_plan: the diff between the installed set and a resolution.
#include <doctest/doctest.h>

#include "resolver/memory_provider.hpp"
#include "resolver/plan.hpp"
#include "tests/resolver/resolver_test_support.hpp"

namespace resolver_plan_test {

using namespace envfix;
using namespace envfix::resolver;

namespace {
InstalledPackage inst(std::string name, std::string v, std::vector<std::string> reqs = {}) {
  InstalledPackage p{std::move(name), *specs::Version::parse(v), {}};
  for (const auto& r : reqs) p.requires_dist.push_back(*specs::Requirement::parse(r));
  return p;
}
} // namespace

TEST_SUITE("unit/resolver/plan") {

  TEST_CASE("plan: replace, keep, remove inconsistent companions, duplicates and unused CUDA runtimes") {
    MemoryProvider p;
    p.add(index::Candidate{.filename = "torch-2.7.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl", .sha256 = "ab", .size = 900},
          "Metadata-Version: 2.1\nName: torch\nVersion: 2.7.0+cu128\nRequires-Dist: filelock\n"
          "Requires-Dist: nvidia-cublas-cu12==12.8.3\n");
    p.add_wheel("filelock-3.0-py3-none-any.whl");
    p.add(
        index::Candidate{.filename = "nvidia_cublas_cu12-12.8.3-py3-none-manylinux_2_27_x86_64.whl", .sha256 = "cd", .size = 100},
        "Metadata-Version: 2.1\nName: nvidia-cublas-cu12\nVersion: 12.8.3\n");
    ResolveOptions o;
    o.target = test::cpython_linux();
    Resolver r(p, o);
    auto res = r.resolve(test::reqs({"torch"}));
    REQUIRE(res.has_value());
    PlanInputs in;
    in.resolution = &*res;
    in.framework_packages = {"torch", "torchvision", "torchaudio"};
    in.installed = {inst("torch", "2.6.0+cu124"),
                    inst("torchaudio", "2.6.0+cu124"),
                    inst("filelock", "3.0"),
                    inst("nvidia-cublas-cu12", "12.4.5.8"),
                    inst("nvidia-cudnn-cu12", "9.1.0"),
                    inst("nvidia-nccl-cu12", "2.21.5"),
                    inst("deepspeed", "0.16", {"nvidia-nccl-cu12"}),
                    inst("six", "1.16"),
                    inst("six", "1.15")};
    auto plan = make_plan(in);
    std::vector<std::string> installs, removes;
    for (const auto& i : plan.install) installs.push_back(i.name + "==" + i.version + " " + i.replaces);
    for (const auto& x : plan.remove)
      removes.push_back(x.name + "==" + x.version.to_string() + " " + std::string(to_string(x.why)));
    CHECK(installs == std::vector<std::string>{"nvidia-cublas-cu12==12.8.3 12.4.5.8", "torch==2.7.0+cu128 2.6.0+cu124"});
    CHECK(removes == std::vector<std::string>{"nvidia-cublas-cu12==12.4.5.8 replaced",
                                              "nvidia-cudnn-cu12==9.1.0 unused-cuda-runtime", "six==1.15 duplicate",
                                              "torch==2.6.0+cu124 replaced", "torchaudio==2.6.0+cu124 companion-inconsistent"});
    CHECK(plan.keep == std::vector<std::string>{"filelock==3.0"});
    CHECK(plan.download_size() == 1000);
  }

  TEST_CASE("plan: an environment that already matches is empty") {
    MemoryProvider p;
    p.add_wheel("a-1.0-py3-none-any.whl");
    ResolveOptions o;
    o.target = test::cpython_linux();
    Resolver r(p, o);
    auto res = r.resolve(test::reqs({"a"}));
    REQUIRE(res.has_value());
    PlanInputs in;
    in.resolution = &*res;
    in.installed = {inst("a", "1.0")};
    auto plan = make_plan(in);
    CHECK(plan.empty());
    CHECK(plan.keep == std::vector<std::string>{"a==1.0"});
  }
}

} // namespace resolver_plan_test
