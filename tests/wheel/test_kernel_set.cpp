#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "tests/wheel/cuobjdump_listing.hpp"
#include "tests/wheel/kernel_fixtures.hpp"
#include "tests/wheel/nvcc_fixtures.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_set.hpp"

namespace wheel_kernel_set_test {

using namespace envfix;
using namespace envfix::test;
using wheel::coverage;
using wheel::KernelSet;
using wheel::Verdict;
namespace fs = std::filesystem;

namespace {

Expected<KernelSet> parse(const Bytes& b, std::string_view name = "test.bin") {
  return wheel::read_kernels(std::span<const std::uint8_t>(b.data(), b.size()), name);
}

std::vector<std::string> v(std::initializer_list<const char*> l) { return {l.begin(), l.end()}; }

specs::ComputeCapability cc(const char* s) { return specs::ComputeCapability::parse(s).value(); }

// Every entry's arch, as a sorted multiset of names.
std::vector<std::string> multiset(const wheel::FatbinContainer& c) {
  std::vector<std::string> out;
  for (const auto& e : c.entries) out.push_back(e.arch.to_string());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST_SUITE("unit/wheel/kernel_set") {
  TEST_CASE("raw fatbin: kinds, variable header sizes, a/f flags, compression") {
    auto b = fake_container({
        {2, 80, 0x11, 64, 16},
        {2, 90, 0x100011, 64, 32},    // sm_90a
        {2, 100, 0x1200011, 104, 24}, // sm_100f, sm_100+ header size
        {1, 90, 0x8011, 80, 40},      // compute_90, zstd
        {1, 120, 0x202011, 72, 8},    // compute_120f, lz4
        {8, 90, 0x18011, 120, 16},    // lto_90, obfuscated
    });
    auto ks = parse(b);
    REQUIRE(ks);
    REQUIRE(ks->containers.size() == 1);
    CHECK(ks->entry_count() == 6);
    CHECK(ks->sass() == v({"sm_80", "sm_90a", "sm_100f"}));
    CHECK(ks->ptx() == v({"compute_90", "compute_120f"}));
    CHECK(ks->lto() == v({"lto_90"}));
    CHECK(ks->compressed_count() == 3);
    CHECK(ks->has_zstd());
    const auto& e = ks->containers[0].entries;
    CHECK(e[3].compression == "zstd");
    CHECK(e[4].compression == "lz4");
    CHECK(e[0].compression.empty());
    CHECK(e[3].code_major == 9);
    CHECK(e[2].offset == 16 + 80 + 96);
    CHECK(ks->containers[0].section.empty());
    CHECK(ks->containers[0].registered());
  }

  TEST_CASE("coverage is counted per container") {
    // TU1: sm_80 + sm_90; TU2: sm_80 + compute_80; TU3: sm_90a only; TU4: LTO only (not loadable).
    auto b = concat({fake_container({{2, 80}, {2, 90}}), fake_container({{2, 80}, {1, 80, 0x11, 80, 8}}),
                     fake_container({{2, 90, 0x100011}}), fake_container({{8, 90, 0x11, 120, 8}})});
    auto ks = parse(b).value();
    REQUIRE(ks.containers.size() == 4);
    auto c90 = coverage(ks, cc("9.0"));
    CHECK(c90.registered.total() == 3);
    CHECK(c90.registered.runnable() == 3);
    CHECK(c90.registered.sass == 2);
    CHECK(c90.registered.ptx == 1);
    CHECK(c90.via() == "mixed");
    CHECK(c90.verdict == Verdict::full);
    auto c86 = coverage(ks, cc("8.6"));
    CHECK(c86.registered.runnable() == 2);
    CHECK(c86.via() == "sass");
    CHECK(c86.verdict == Verdict::partial);
    auto c120 = coverage(ks, cc("12.0"));
    CHECK(c120.registered.runnable() == 1);
    CHECK(c120.via() == "ptx");
    auto c75 = coverage(ks, cc("7.5"));
    CHECK(c75.registered.runnable() == 0);
    CHECK(c75.via() == "none");
    CHECK(c75.verdict == Verdict::none);
    CHECK(coverage(KernelSet{}, cc("9.0")).verdict == Verdict::none);
  }

  TEST_CASE("strict tiling rejects damaged containers with the offset") {
    auto good = fake_container({{2, 80}, {2, 90}});
    SUBCASE("fatSize past the end (truncated file)") {
      Bytes b(good.begin(), good.end() - 8);
      auto ks = parse(b, "trunc.fatbin");
      REQUIRE(!ks);
      CHECK(ks.error().render().find("trunc.fatbin") != std::string::npos);
      CHECK(ks.error().render().find("0x0") != std::string::npos);
    }
    SUBCASE("entry payload overruns the container") {
      auto b = good;
      put(b, 16 + 8, 1000, 8);
      auto ks = parse(b);
      REQUIRE(!ks);
      CHECK(ks.error().render().find("offset 0x10") != std::string::npos);
    }
    SUBCASE("entries do not tile exactly") {
      auto b = good;
      put(b, 8, good.size() - 16 - 8, 8); // container ends inside the second entry
      CHECK(!parse(b));
    }
    SUBCASE("bad entry version, header size, kind, arch") {
      for (auto [off, val, n] :
           {std::tuple{16 + 2, 0x0102, 2}, {16 + 4, 32, 4}, {16, 3, 2}, {16 + 0x1C, 5, 4}, {16 + 4, 0xFFFFFFF0, 4}}) {
        auto b = good;
        put(b, off, static_cast<std::uint64_t>(val), n);
        CHECK_MESSAGE(!parse(b), off);
      }
    }
    SUBCASE("container version and header size") {
      auto b = good;
      put(b, 4, 2, 2);
      CHECK(!parse(b));
      b = good;
      put(b, 6, 8, 2);
      CHECK(!parse(b));
    }
    SUBCASE("padding and garbage between containers") {
      auto b = concat({good, Bytes(16, 0), good});
      auto ks = parse(b).value();
      CHECK(ks.containers.size() == 2);
      CHECK(ks.warnings.empty());
      b = concat({good, Bytes{1, 2, 3, 4, 5, 6, 7, 8}, good});
      ks = parse(b).value();
      CHECK(ks.containers.size() == 2);
      CHECK(ks.warnings.size() == 1);
    }
  }

  TEST_CASE("ELF: .nv_fatbin, __nv_relfatbin and embedded fatbins in other sections") {
    auto reg = concat({fake_container({{2, 80}, {2, 90}}), fake_container({{2, 86}, {1, 86, 0x8011, 80, 8}})});
    auto rel = fake_container({{2, 80, 0x2011}, {1, 90, 0x8011, 80, 8}});
    Bytes text = {0x48, 0xb8};
    auto decoy = fake_container({{2, 75}});
    text.insert(text.end(), decoy.begin(), decoy.end()); // a valid container inside code: ignored
    Bytes rodata = {0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}; // magic, bad size
    auto emb = fake_container({{2, 120, 0x8011}});
    rodata.insert(rodata.end(), emb.begin(), emb.end());
    auto elf = fake_elf({{".text", text, 0x6},
                         {".nv_fatbin", reg},
                         {"__nv_relfatbin", rel},
                         {".rodata", rodata},
                         {".nvFatBinSegment", Bytes(24, 0)},
                         {".debug_info", decoy, 0},
                         {".bss", {}, 0x3, 8}});
    auto ks = parse(elf, "libfake.so").value();
    REQUIRE(ks.containers.size() == 4);
    CHECK(ks.containers[0].section == ".nv_fatbin");
    CHECK(ks.containers[2].section == "__nv_relfatbin");
    CHECK(ks.containers[3].section == ".rodata");
    CHECK(!ks.containers[3].registered());
    CHECK(ks.sass() == v({"sm_80", "sm_86", "sm_90", "sm_120"}));
    CHECK(ks.ptx() == v({"compute_86", "compute_90"}));
    auto c = coverage(ks, cc("12.0"));
    CHECK(c.registered.total() == 3);
    CHECK(c.embedded.total() == 1);
    CHECK(c.embedded.runnable() == 1);
    CHECK(c.registered.runnable() == 2); // TU2 and the -rdc object by PTX JIT, TU1 (sm_80, sm_90) not at all
    CHECK(c.registered.ptx == 2);
    auto c9 = coverage(ks, cc("9.0"));
    CHECK(c9.registered.runnable() == 3);
    CHECK(c9.registered.sass == 1);
    CHECK(coverage(ks, cc("8.6")).registered.runnable() == 3);
  }

  TEST_CASE("ELF errors name the file and the offset") {
    auto elf = fake_elf({{".nv_fatbin", fake_container({{2, 80}})}});
    SUBCASE("truncated: section headers cut off") {
      Bytes b(elf.begin(), elf.end() - 10);
      auto ks = parse(b, "libcut.so");
      REQUIRE(!ks);
      CHECK(ks.error().message.find("libcut.so") != std::string::npos);
      CHECK(ks.error().message.find("truncated") != std::string::npos);
    }
    SUBCASE("section data past the end") {
      auto b = elf;
      std::uint64_t shoff = 0;
      for (int i = 0; i < 8; ++i) shoff |= std::uint64_t(b[40 + i]) << (8 * i);
      put(b, shoff + 64 + 32, 1u << 30, 8);
      auto ks = parse(b, "libbig.so");
      REQUIRE(!ks);
      CHECK(ks.error().message.find("past the end") != std::string::npos);
    }
    SUBCASE("damaged container inside .nv_fatbin") {
      auto b = elf;
      static constexpr std::uint8_t magic[] = {0x50, 0xED, 0x55, 0xBA};
      auto pos = static_cast<std::size_t>(std::search(b.begin(), b.end(), std::begin(magic), std::end(magic)) - b.begin());
      put(b, pos + 16 + 2, 0x0202, 2);
      auto ks = parse(b, "libdmg.so");
      REQUIRE(!ks);
      auto r = ks.error().render();
      CHECK(r.find("damaged fatbin in section .nv_fatbin") != std::string::npos);
      CHECK(r.find(fmt::format("{:#x}", pos + 16)) != std::string::npos);
    }
    SUBCASE("not a binary at all") {
      std::string text = "INPUT(libfoo.so.1)\n";
      auto ks = parse(Bytes(text.begin(), text.end()), "libfoo.so");
      REQUIRE(!ks);
      CHECK(ks.error().message.find("not an ELF") != std::string::npos);
    }
    SUBCASE("32-bit ELF") {
      auto b = elf;
      b[4] = 1;
      CHECK(!parse(b));
    }
  }

  TEST_CASE("raw cubins take the arch from e_flags (both ELF ABIs)") {
    auto v2 = parse(fake_elf({}, 190, 0x06005a04, 8)).value(); // sm_90, ABI v8 (CUDA 13 ptxas)
    CHECK(v2.sass() == v({"sm_90"}));
    auto v2b = parse(fake_elf({}, 190, 0x06007802, 8)).value();
    CHECK(v2b.sass() == v({"sm_120"}));
    auto v1 = parse(fake_elf({}, 190, 0x5a055a, 7)).value(); // sm_90, ABI v7
    CHECK(v1.sass() == v({"sm_90"}));
    auto v1a = parse(fake_elf({}, 190, 0x5a0d5a, 7)).value(); // + EF_CUDA_ACCELERATORS_V1
    CHECK(v1a.sass() == v({"sm_90a"}));
    CHECK(!parse(fake_elf({}, 190, 0, 8)));
  }

  TEST_CASE("static archives: GNU long names, odd sizes, member names in errors") {
    auto o1 = fake_elf({{"__nv_relfatbin", fake_container({{2, 80}, {1, 90, 0x8011, 80, 8}})}});
    auto o2 = fake_elf({{".nv_fatbin", fake_container({{2, 90}})}});
    Bytes odd = {'x', 'y', 'z'};
    auto ar = fake_ar({{"a_very_long_member_name_1.o", o1}, {"odd.txt", odd}, {"k2.o", o2}});
    auto ks = parse(ar, "libk.a").value();
    REQUIRE(ks.containers.size() == 2);
    CHECK(ks.containers[0].member == "a_very_long_member_name_1.o");
    CHECK(ks.containers[1].member == "k2.o");
    CHECK(ks.sass() == v({"sm_80", "sm_90"}));
    CHECK(ks.containers[1].offset > o1.size()); // file-relative offsets
    // A damaged member names the archive and the member.
    Bytes cut(o2.begin(), o2.begin() + 100);
    auto ks2 = parse(fake_ar({{"k1.o", o1}, {"broken.o", cut}}), "libk.a");
    REQUIRE(!ks2);
    CHECK(ks2.error().message.find("libk.a(broken.o)") != std::string::npos);
    // Truncated archive.
    Bytes tr(ar.begin(), ar.begin() + static_cast<long>(ar.size() - 5));
    CHECK(!parse(tr, "libtr.a"));
  }

  TEST_CASE("may_contain_kernels picks binary members of a wheel") {
    for (const char* n : {"torch/lib/libtorch_cuda.so", "x/libcudart.so.12", "libnccl.so.2.21.5", "lib/libk.a", "k.o",
                          "kernels/x.cubin", "a.fatbin"})
      CHECK_MESSAGE(wheel::may_contain_kernels(n), n);
    for (const char* n : {"torch/__init__.py", "x.so.py", "METADATA", ".so", "lib.so.x", "torch/lib/libtorch.so.sig"})
      CHECK_MESSAGE(!wheel::may_contain_kernels(n), n);
  }

  TEST_CASE("cuobjdump listing of libtorch_cuda 2.11.0+cu130 parses into the expected multiset") {
    auto text = util::read_file(fs::path(ENVFIX_FIXTURES_DIR) / "gpu-h200/libtorch_cuda-2.11.0+cu130.cuobjdump-list-elf.txt");
    REQUIRE(text);
    auto counts = cuobjdump_arch_counts(*text);
    std::size_t total = 0;
    for (auto& [k, n] : counts) total += n;
    CHECK(total == 2789);
    // docs/kernels.md, Cross-check with cuobjdump: sm_75/80/86/90/100/120 × 444, sm_100a × 59,
    // sm_103a × 59, sm_90a × 4, sm_89/120a/121a × 1.
    for (const char* a : {"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"}) CHECK(counts[a] == 444);
    CHECK(counts["sm_100a"] == 59);
    CHECK(counts["sm_103a"] == 59);
    CHECK(counts["sm_90a"] == 4);
    CHECK(counts["sm_89"] == 1);
    CHECK(counts.size() == 12);
    // The comparison helper on a synthetic set that mirrors it.
    KernelSet ks;
    for (int i = 0; i < 444; ++i) {
      auto b = fake_container({{2, 75}, {2, 80}, {2, 86}, {2, 90}, {2, 100, 0x1200011}, {2, 120}});
      auto one = parse(b).value();
      one.containers[0].section = ".nv_fatbin";
      ks.append(std::move(one));
    }
    auto mine = cuobjdump_view(ks);
    auto d = diff_counts(counts, mine);
    CHECK(d.find("sm_100a: cuobjdump 59, envfix 0") != std::string::npos);
    CHECK(d.find("sm_100:") == std::string::npos); // `f` folded like cuobjdump does
    CHECK(d.find("sm_75") == std::string::npos);
  }
} // TEST_SUITE unit

// The real libtorch_cuda.so against the captured cuobjdump listing (run on the GPU machine:
// ENVFIX_LIBTORCH_CUDA=/path/to/torch/lib/libtorch_cuda.so).
TEST_SUITE("gpu/wheel/kernel_set") {
  TEST_CASE("libtorch_cuda.so matches cuobjdump --list-elf") {
    const char* p = std::getenv("ENVFIX_LIBTORCH_CUDA");
    if (!p || !*p) {
      std::fprintf(stderr, "SKIP: set ENVFIX_LIBTORCH_CUDA to torch 2.11.0+cu130's libtorch_cuda.so\n");
      std::exit(77);
    }
    auto t0 = std::chrono::steady_clock::now();
    auto ks = wheel::read_kernels_file(p);
    REQUIRE(ks);
    MESSAGE("read in ", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), " s");
    auto text = util::read_file(fs::path(ENVFIX_FIXTURES_DIR) / "gpu-h200/libtorch_cuda-2.11.0+cu130.cuobjdump-list-elf.txt");
    REQUIRE(text);
    CHECK(diff_counts(cuobjdump_arch_counts(*text), cuobjdump_view(*ks)) == "");
    CHECK(ks->containers.size() == 444);
    CHECK(coverage(*ks, cc("9.0")).verdict == Verdict::full);
    CHECK(ks->ptx().empty());
  }
} // TEST_SUITE gpu

// ---- Real CUDA objects built with nvcc at test time (cached in the build dir) ----
namespace {

// The container holding the user's kernels (nvcc also adds a dlink container; docs/kernels.md, The
// dlink container and empty modules): the one whose entries are exactly `expected`.
bool has_container(const KernelSet& ks, std::vector<std::string> expected) {
  std::sort(expected.begin(), expected.end());
  return std::any_of(ks.containers.begin(), ks.containers.end(), [&](const auto& c) { return multiset(c) == expected; });
}

const std::vector<std::string> g80 = {"-gencode", "arch=compute_80,code=sm_80"};
const std::vector<std::string> g90ptx = {"-gencode", "arch=compute_90,code=[sm_90,compute_90]"};

} // namespace

TEST_SUITE("integration/wheel/kernel_set") {
  TEST_CASE("nvcc: plain sm_80") {
    auto ks = read(so("a_sm80.so", g80));
    CHECK(ks.sass() == v({"sm_80"}));
    CHECK(ks.ptx().empty());
    CHECK(has_container(ks, {"sm_80"}));
    CHECK(coverage(ks, cc("8.6")).verdict == Verdict::full);
    CHECK(coverage(ks, cc("9.0")).registered.runnable() == 0);
  }

  TEST_CASE("nvcc: every --compress-mode") {
    struct Mode {
      const char* mode;
      const char* ptx;
      const char* sass;
    };
    const Mode modes[] = {
        {"default", "zstd", ""}, {"size", "zstd", "zstd"}, {"speed", "lz4", ""}, {"balance", "zstd", ""}, {"none", "", ""}};
    for (const auto& m : modes) {
      auto ks = read(so(fmt::format("mode_{}.so", m.mode), g90ptx, {fmt::format("--compress-mode={}", m.mode)}));
      INFO("mode ", m.mode);
      CHECK(ks.sass() == v({"sm_90"}));
      CHECK(ks.ptx() == v({"compute_90"}));
      REQUIRE(has_container(ks, {"sm_90", "compute_90"}));
      for (const auto& c : ks.containers)
        for (const auto& e : c.entries) {
          if (c.entries.size() != 2) continue; // the dlink container
          CHECK(e.compression == (e.arch.kind == specs::GpuArch::Kind::ptx ? m.ptx : m.sass));
        }
      CHECK(coverage(ks, cc("9.0")).via() == "sass");
      CHECK(coverage(ks, cc("12.0")).via() == "ptx");
    }
  }

  TEST_CASE("nvcc: arch-specific and family-specific targets") {
    auto ks =
        read(so("variants.so",
                {"-gencode", "arch=compute_90a,code=[sm_90a,compute_90a]", "-gencode", "arch=compute_100a,code=sm_100a",
                 "-gencode", "arch=compute_100f,code=[sm_100f,compute_100f]", "-gencode", "arch=compute_120f,code=sm_120f"}));
    CHECK(ks.sass() == v({"sm_90a", "sm_100a", "sm_100f", "sm_120f"}));
    CHECK(ks.ptx() == v({"compute_90a", "compute_100f"}));
    CHECK(has_container(ks, {"sm_90a", "compute_90a", "sm_100a", "sm_100f", "compute_100f", "sm_120f"}));
    CHECK(coverage(ks, cc("9.0")).verdict == Verdict::full);
    CHECK(coverage(ks, cc("10.3")).verdict == Verdict::full); // sm_100f runs on 10.3; sm_100a does not
    CHECK(coverage(ks, cc("12.1")).verdict == Verdict::full);
    CHECK(coverage(ks, cc("8.9")).registered.runnable() == 0);
  }

  TEST_CASE("nvcc: PTX only, JIT on later GPUs") {
    auto ks = read(so("ptx80.so", {"-gencode", "arch=compute_80,code=compute_80"}));
    CHECK(ks.sass().empty());
    CHECK(ks.ptx() == v({"compute_80"}));
    CHECK(coverage(ks, cc("9.0")).via() == "ptx");
    CHECK(coverage(ks, cc("12.0")).verdict == Verdict::full);
    CHECK(coverage(ks, cc("7.5")).registered.runnable() == 0);
  }

  TEST_CASE("nvcc: several translation units in one .so") {
    auto ks =
        read(so("multi_tu.so", {"-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_86,code=[sm_86,compute_86]"},
                {}, {"k1.cu", "k2.cu"}));
    std::size_t tus = std::count_if(ks.containers.begin(), ks.containers.end(), [](const auto& c) {
      return multiset(c) == std::vector<std::string>{"compute_86", "sm_80", "sm_86"};
    });
    CHECK(tus == 2);
    CHECK(coverage(ks, cc("8.9")).registered.runnable() >= 2);
    CHECK(coverage(ks, cc("8.0")).registered.runnable() == coverage(ks, cc("8.0")).registered.total());
  }

  TEST_CASE("nvcc: -rdc objects, a static archive, an -rdc shared library") {
    std::vector<std::string> g = {"-gencode", "arch=compute_80,code=sm_80", "-gencode",
                                  "arch=compute_90,code=[sm_90,compute_90]"};
    std::vector<std::string> argv = {nvcc.string(), "-rdc=true", "-Xcompiler", "-fPIC", "-c"};
    argv.insert(argv.end(), g.begin(), g.end());
    argv.insert(argv.end(), {(cuda_src / "rdc1.cu").string(), (cuda_src / "rdc2.cu").string()});
    build("rdc1.o", argv);
    auto o = read(fixture_dir / "rdc1.o");
    REQUIRE(o.containers.size() == 1);
    CHECK(o.containers[0].section == "__nv_relfatbin");
    CHECK(multiset(o.containers[0]) == v({"compute_90", "sm_80", "sm_90"}));
    build("librdc.a", {"ar", "rcs", "librdc.a", "rdc1.o", "rdc2.o"});
    auto a = read(fixture_dir / "librdc.a");
    REQUIRE(a.containers.size() == 2);
    CHECK(a.containers[0].member == "rdc1.o");
    CHECK(a.containers[1].member == "rdc2.o");
    CHECK(a.entry_count() == 6);
    auto s = read(build("librdc.so", {nvcc.string(), "-shared", "-rdc=true", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                                      "arch=compute_90,code=sm_90", "-o", "librdc.so", "rdc1.o", "rdc2.o"}));
    bool rel = false, reg = false;
    for (const auto& c : s.containers) {
      rel |= c.section == "__nv_relfatbin";
      reg |= c.section == ".nv_fatbin";
    }
    CHECK(rel);
    CHECK(reg);
    // Only in __nv_relfatbin, which the runtime links at load (docs/kernels.md, Relocatable device code).
    CHECK(s.ptx() == v({"compute_90"}));
  }

  TEST_CASE("nvcc: a wheel with a .so member, read without extracting") {
    auto lib = so("a_sm80.so", g80);
    auto whl = fixture_dir / "fake-1.0-cp311-cp311-linux_x86_64.whl";
    std::string script =
        fmt::format("import zipfile,sys\n"
                    "with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n"
                    "  z.write(sys.argv[2], 'fake/lib/libk.so')\n"
                    "  z.writestr('fake/lib/libscript.so', 'INPUT(libk.so)\\n')\n"
                    "  z.writestr('fake/__init__.py', '')\n"
                    "  z.writestr('fake-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: fake\\nVersion: 1.0\\n')\n");
    auto r = util::run_process({"python3", "-c", script, whl.string(), lib.string()});
    REQUIRE(r);
    REQUIRE(r->ok());
    auto members = wheel::read_kernels_in_wheel(whl);
    REQUIRE(members);
    REQUIRE(members->size() == 1);
    CHECK((*members)[0].first == "fake/lib/libk.so");
    auto direct = read(lib);
    auto via_whl = read(whl);
    CHECK(via_whl.sass() == direct.sass());
    CHECK(via_whl.entry_count() == direct.entry_count());
    CHECK(via_whl.containers[0].member == "fake/lib/libk.so");
    // A corrupt wheel is an error naming it.
    auto bad = fixture_dir / "bad.whl";
    std::ofstream(bad) << "PK\x03\x04 not really a zip";
    CHECK(!wheel::read_kernels_in_wheel(bad));
  }

  TEST_CASE("real CUDA libraries in /usr/local/cuda/lib64 parse, with sensible archs") {
    const fs::path lib64 = "/usr/local/cuda/lib64";
    if (!fs::exists(lib64 / "libcublasLt.so")) {
      MESSAGE("no CUDA libraries in ", lib64.string(), "; skipped");
      return;
    }
    for (const char* name : {"libcudart.so", "libcublasLt.so", "libcufft.so", "libcusparse.so", "libnccl.so", "libcudnn_ops.so",
                             "libnvJitLink.so"}) {
      if (!fs::exists(lib64 / name)) continue;
      auto t0 = std::chrono::steady_clock::now();
      auto ks = wheel::read_kernels_file(lib64 / name);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      INFO(name);
      REQUIRE(ks);
      MESSAGE(std::string(name), ": ", ks->containers.size(), " containers, ", ks->entry_count(), " entries in ", secs, " s");
      for (const auto& a : ks->archs()) CHECK((a.major >= 5 && a.major <= 13));
      std::string n = name;
      if (n == "libcudart.so" || n == "libnvJitLink.so") CHECK(ks->containers.empty()); // the magic in .text is rejected
      if (n == "libcublasLt.so") {
        CHECK(ks->containers.size() == 3165);
        CHECK(ks->entry_count() == 6120);
        CHECK(ks->has_zstd());
        for (const char* a : {"sm_75", "sm_90a", "sm_100f", "sm_120"}) CHECK(std::ranges::count(ks->sass(), std::string(a)) == 1);
      }
      if (n == "libcufft.so") {
        CHECK(ks->containers.size() == 23984); // 23 983 of them in .ldata (docs/kernels.md, Embedded fatbins)
        CHECK(ks->sass().size() > 1);
      }
      if (n == "libnccl.so") CHECK(ks->containers.size() == 143);
    }
  }
} // TEST_SUITE integration

} // namespace wheel_kernel_set_test
