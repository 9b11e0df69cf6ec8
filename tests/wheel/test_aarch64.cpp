// Kernels in aarch64 host binaries (GH200, GB10, Jetson): real aarch64 shared objects built at test
// time with Debian's cross toolchain (gcc-aarch64-linux-gnu, scripts/install-deps.sh) around real
// nvcc device code, read by the library and judged for integrated (Tegra) and discrete devices.
// scripts/cross-aarch64.sh also runs these cases in the aarch64 build, under qemu-user.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tests/wheel/nvcc_fixtures.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"
#include "wheel/coverage.hpp"
#include "wheel/elf.hpp"

namespace wheel_aarch64_test {

using namespace envfix;
using namespace envfix::test;
using wheel::Verdict;
namespace fs = std::filesystem;

namespace {

constexpr std::uint16_t em_aarch64 = 183;

specs::ComputeCapability cc(const char* s) { return specs::ComputeCapability::parse(s).value(); }

// The cross compiler, or nullopt after saying why the case is skipped.
std::optional<fs::path> cross_gxx() {
  auto gxx = util::find_in_path("aarch64-linux-gnu-g++");
  if (!gxx) MESSAGE("SKIP: aarch64-linux-gnu-g++ not in PATH (Debian g++-aarch64-linux-gnu, scripts/install-deps.sh)");
  return gxx;
}

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// nvcc compiling for an aarch64 host: -ccbin makes nvcc look for targets/aarch64-linux/include,
// which an x86-64 toolkit lacks; the runtime headers of its own target are host-neutral, so they are
// passed instead. The host stub (fatbin registration) is compiled by the aarch64 g++. Linked with
// -shared and no cudart: the runtime's symbols stay undefined, as in any library that is loaded later.
fs::path nvcc_cross_so(const fs::path& gxx, const std::string& out, const std::vector<std::string>& gencode) {
  const fs::path include = nvcc.parent_path().parent_path() / "targets/x86_64-linux/include";
  const std::string obj = out + ".o";
  build(obj, cat({nvcc.string(), "-ccbin", gxx.string(), "-c", "-Xcompiler", "-fPIC", "-I" + include.string(), "-o", obj,
                  (cuda_src / "k1.cu").string()},
                 gencode));
  return build(out, {gxx.string(), "-shared", "-o", out, obj});
}

// A real nvcc fatbin placed in .nv_fatbin of an aarch64 .so by the cross assembler and linker (the
// section is 8-byte aligned like the containers in it: docs/kernels.md, Container layout).
fs::path incbin_so(const fs::path& gxx, const std::string& out, const std::vector<std::string>& gencode) {
  const std::string fatbin = out + ".fatbin";
  build(fatbin, cat({nvcc.string(), "-fatbin", "-o", fatbin, (cuda_src / "k1.cu").string()}, gencode));
  const fs::path s = fixture_dir / (out + ".S");
  std::ofstream(s) << ".section .nv_fatbin,\"a\"\n.balign 8\n.incbin \"" << fatbin << "\"\n";
  return build(out, {gxx.string(), "-shared", "-nostdlib", "-o", out, s.string()});
}

void check_aarch64_elf(const fs::path& so) {
  auto bytes = util::read_file(so);
  REQUIRE(bytes);
  auto elf = wheel::ElfFile::parse(std::span(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()), so.string());
  REQUIRE(elf);
  CHECK(elf->machine == em_aarch64);
  CHECK(elf->type == 3); // ET_DYN
  bool fatbin_section = false;
  for (const auto& s : elf->sections) fatbin_section = fatbin_section || s.name == ".nv_fatbin";
  CHECK(fatbin_section);
}

const std::vector<std::string> g87_ptx80 = {"-gencode", "arch=compute_87,code=sm_87", "-gencode",
                                            "arch=compute_80,code=compute_80"};
const std::vector<std::string> g80 = {"-gencode", "arch=compute_80,code=sm_80"};

// The Orin (integrated 8.7) against sm_87 SASS + compute_80 PTX, and against sm_80 SASS alone.
void check_verdicts(const wheel::KernelSet& orin_set, const wheel::KernelSet& sm80_set) {
  CHECK(orin_set.sass() == std::vector<std::string>{"sm_87"});
  CHECK(orin_set.ptx() == std::vector<std::string>{"compute_80"});
  auto orin = wheel::coverage(orin_set, cc("tegra:8.7"));
  CHECK(orin.verdict == Verdict::full);
  CHECK(orin.registered.sass == orin.total()); // by SASS, not JIT
  // sm_87 is Tegra-only SASS: a discrete 8.6 runs the compute_80 PTX, by JIT only.
  auto rtx = wheel::coverage(orin_set, cc("8.6"));
  CHECK(rtx.verdict == Verdict::full);
  CHECK(rtx.jit_only());

  CHECK(sm80_set.sass() == std::vector<std::string>{"sm_80"});
  CHECK(wheel::coverage(sm80_set, cc("tegra:8.7")).verdict == Verdict::none);
  CHECK(wheel::coverage(sm80_set, cc("8.6")).verdict == Verdict::full);
}

} // namespace

TEST_SUITE("integration/wheel/aarch64") {
  TEST_CASE("aarch64 .so compiled by nvcc with the cross g++") {
    require_nvcc();
    auto gxx = cross_gxx();
    if (!gxx) return;
    auto orin = nvcc_cross_so(*gxx, "libk1_aarch64_sm87.so", g87_ptx80);
    auto sm80 = nvcc_cross_so(*gxx, "libk1_aarch64_sm80.so", g80);
    check_aarch64_elf(orin);
    check_aarch64_elf(sm80);
    check_verdicts(read(orin), read(sm80));
  }

  TEST_CASE("aarch64 .so carrying an nvcc fatbin in .nv_fatbin (.incbin)") {
    require_nvcc();
    auto gxx = cross_gxx();
    if (!gxx) return;
    auto orin = incbin_so(*gxx, "libk1_incbin_aarch64_sm87.so", g87_ptx80);
    auto sm80 = incbin_so(*gxx, "libk1_incbin_aarch64_sm80.so", g80);
    check_aarch64_elf(orin);
    check_aarch64_elf(sm80);
    check_verdicts(read(orin), read(sm80));
  }
} // TEST_SUITE integration

} // namespace wheel_aarch64_test
