// The kernel gate on real binaries: every CUDA library of this machine's toolkit
// (/usr/local/cuda/lib64), grouped into the packages NVIDIA ships them in, judged for eleven GPUs.
// `none` must be exactly where no entry of a file runs (checked against the entries themselves,
// with GpuArch::runs_on), and no library is refused on 7.5 or later: every one of them works on
// every GPU CUDA 13 supports. Partial coverage is a library's note and an extension's warning.
// Skipped, saying why, where the toolkit is absent.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "installer/kernel_gate.hpp"
#include "util/fs.hpp"
#include "wheel/kernel_set.hpp"

namespace installer_kernel_gate_test {

using namespace envfix;
namespace fs = std::filesystem;

namespace {

const char* const k_gpus[] = {"6.1", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "12.0", "12.1"};

// The wheel that ships a library (nvidia-cublas ships libcublas, libcublasLt and libnvblas, …).
std::string package_of(const std::string& lib) {
  static const std::pair<const char*, const char*> prefixes[] = {
      {"libcublas", "nvidia-cublas"},         {"libnvblas", "nvidia-cublas"},
      {"libcufft", "nvidia-cufft"},           {"libcudnn", "nvidia-cudnn"},
      {"libcusparse", "nvidia-cusparse"},     {"libcusolver", "nvidia-cusolver"},
      {"libcurand", "nvidia-curand"},         {"libnccl", "nvidia-nccl"},
      {"libcudart", "nvidia-cuda-runtime"},   {"libnvrtc", "nvidia-cuda-nvrtc"},
      {"libnvJitLink", "nvidia-nvjitlink"},   {"libcupti", "nvidia-cuda-cupti"},
      {"libnvperf", "nvidia-cuda-cupti"},     {"libpcsampling", "nvidia-cuda-cupti"},
      {"libcheckpoint", "nvidia-cuda-cupti"}, {"libnvtx", "nvidia-nvtx"},
      {"libnvvm", "nvidia-cuda-nvcc"},        {"libnpp", "nvidia-npp"},
      {"libnvjpeg", "nvidia-nvjpeg"},         {"libcusparseLt", "nvidia-cusparselt"}};
  std::string best;
  std::size_t best_len = 0;
  for (const auto& [p, pkg] : prefixes)
    if (lib.starts_with(p) && std::string_view(p).size() > best_len) {
      best = pkg;
      best_len = std::string_view(p).size();
    }
  return best.empty() ? "nvidia-" + lib : best;
}

// Does any SASS/PTX entry of any container run on `cc`? Computed from the entries, not the model.
bool any_entry_runs(const wheel::KernelSet& ks, specs::ComputeCapability cc) {
  for (const auto& c : ks.containers)
    for (const auto& e : c.entries)
      if (e.arch.runs_on(cc)) return true;
  return false;
}

} // namespace

TEST_SUITE("integration/installer/kernel_gate") {
  TEST_CASE("kernel gate: the real CUDA libraries of /usr/local/cuda/lib64") {
    const fs::path lib = "/usr/local/cuda/lib64";
    std::error_code ec;
    if (!fs::is_directory(lib, ec)) {
      std::fprintf(stderr, "SKIP: %s not found; the real-library coverage test needs the CUDA toolkit\n", lib.c_str());
      std::exit(77);
    }
    // Regular shared objects once each (the .so / .so.N links name the same files).
    std::map<std::string, fs::path> files; // realpath → a name
    for (const auto& e : fs::directory_iterator(lib)) {
      auto name = e.path().filename().string();
      if (name.find(".so") == std::string::npos) continue;
      auto real = fs::canonical(e.path(), ec);
      if (ec || !fs::is_regular_file(real, ec)) continue;
      files.emplace(real.string(), real);
    }
    REQUIRE(files.size() >= 10);

    std::map<std::string, std::size_t> pkg_index;
    std::vector<installer::GatePackage> packages;
    std::vector<installer::StagedObject> objects;
    std::map<std::string, wheel::KernelSet> sets;
    std::size_t with_code = 0;
    for (const auto& [real, path] : files) {
      auto ks = wheel::read_kernels_file(path);
      INFO(path.string(), ": ", ks ? "" : ks.error().render());
      REQUIRE(ks);
      with_code += ks->empty() ? 0 : 1;
      auto pkg = package_of(path.filename().string());
      auto [it, added] = pkg_index.emplace(pkg, packages.size());
      if (added) packages.push_back({pkg, "13.0", {}, wheel::CodeRole::library});
      // The path stands in for the RECORD hash: the gate reads each file once, then takes its profile
      // from the evidence store for the other GPUs.
      objects.push_back({it->second, path.filename().string(), path.string(), "test:" + real});
      sets.emplace(path.filename().string(), std::move(*ks));
    }
    MESSAGE(fmt::format("{} libraries, {} with GPU code, in {} packages", files.size(), with_code, packages.size()));
    REQUIRE(with_code >= 8);

    auto store_dir = util::make_temp_dir(fs::temp_directory_path(), "envfix-gate-").value();
    wheel::EvidenceStore store(store_dir, "test secret");
    for (const char* gpu : k_gpus) {
      auto cc = specs::ComputeCapability::parse(gpu).value();
      // 1. Per file: `none` exactly where no entry runs.
      for (const auto& [name, ks] : sets) {
        if (wheel::KernelProfile::of(ks).empty()) continue;
        auto fc = wheel::coverage(ks, cc);
        INFO(name, " on ", cc.sm_name(), ": ", std::string(wheel::to_string(fc.verdict)), " ", fc.runnable(), "/", fc.total());
        if (cc == specs::ComputeCapability{9, 0})
          MESSAGE(fmt::format("{} on sm_90: {} {}/{} (registered {}/{}, embedded {}/{})", name, wheel::to_string(fc.verdict),
                              fc.runnable(), fc.total(), fc.registered.runnable(), fc.registered.total(), fc.embedded.runnable(),
                              fc.embedded.total()));
        CHECK((fc.verdict == wheel::Verdict::none) == !any_entry_runs(ks, cc));
      }
      // 2. Per package, through the gate itself.
      installer::GateOptions go;
      go.gpus = {{fmt::format("GPU {}", gpu), cc}};
      go.threads = 2;
      go.evidence = &store;
      installer::KernelGate gate(packages, go);
      auto r = gate(objects);
      if (cc >= specs::ComputeCapability{7, 5}) {
        INFO("on ", cc.sm_name(), ": ", r ? "" : r.error().render());
        CHECK(r);
        CHECK_FALSE(gate.refusal());
      } else {
        // CUDA 13 has no code for Pascal or Volta: refused, and the refusal says so.
        REQUIRE_FALSE(r);
        REQUIRE(gate.refusal());
        CHECK(gate.refusal()->coverage.verdict == wheel::Verdict::none);
        CHECK(r.error().message.find("none of its") != std::string::npos);
      }
      CHECK(gate.files_read() + gate.files_from_evidence() == objects.size());
      // 3. One reading for every role (wheel::read_coverage): the libraries' arch-specialised modules
      // are a note when a framework requires them; the same binaries as an extension's are a gap.
      if (cc == specs::ComputeCapability{9, 0} && r) {
        REQUIRE_FALSE(gate.notes().empty()); // some library has modules for other archs only
        auto as_extensions = packages;
        for (auto& p : as_extensions) p.role = wheel::CodeRole::extension;
        installer::KernelGate ext(as_extensions, go);
        REQUIRE(ext(objects));
        CHECK(ext.notes().empty());
        CHECK(ext.warnings().size() >= gate.notes().size());
      }
    }
    fs::remove_all(store_dir);
  }
} // TEST_SUITE integration

} // namespace installer_kernel_gate_test
