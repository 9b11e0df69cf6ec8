#pragma once
// The one coverage model: will a binary's GPU code run on a device? Used by inspect, doctor, plan,
// apply and lock alike (docs/architecture.md, "Kernel coverage").
//
// Counted per fatbin container (one per translation unit), registered and embedded. Each container
// is classified for a device; a file and a package get a verdict:
//   full    every container has an entry that runs;
//   partial some do, some do not (vendor libraries ship arch-specialised modules loaded only on
//           their own arch, cuFFT keeps its kernels in fatbins embedded in .ldata: normal there;
//           in a framework library it means "a small test passes, the full app fails");
//   none    no entry of the file (package), registered or embedded, runs on the device.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "specs/cuda_version.hpp"
#include "specs/gpu_arch.hpp"
#include "util/error.hpp"
#include "wheel/kernel_set.hpp"

namespace envfix::wheel {

enum class Verdict { full, partial, none };
[[nodiscard]] const char* to_string(Verdict v); // "full", "partial", "none"

// A KernelSet reduced to what coverage needs: loadable containers (SASS or PTX; LTO-IR only is not
// loadable) grouped by the set of archs they hold. Small enough to keep as evidence per file:
// libtorch_cuda.so's 444 containers are a handful of groups.
struct ContainerGroup {
  std::vector<specs::GpuArch> archs; // sorted unique (SASS and PTX; LTO-IR dropped)
  bool registered = true;            // see FatbinContainer::registered()
  std::uint64_t count = 0;
  auto operator<=>(const ContainerGroup&) const = default;
};

struct KernelProfile {
  std::vector<ContainerGroup> groups; // sorted
  bool zstd = false;                  // ZSTD-compressed SASS/PTX: needs a driver for CUDA >= 12.4

  [[nodiscard]] static KernelProfile of(const KernelSet& ks);
  [[nodiscard]] bool empty() const { return groups.empty(); } // no GPU code a device could load
  [[nodiscard]] std::uint64_t containers() const;
  [[nodiscard]] std::vector<std::string> sass() const; // sorted unique names, as KernelSet::sass()
  [[nodiscard]] std::vector<std::string> ptx() const;
  [[nodiscard]] nlohmann::json to_json() const;
  [[nodiscard]] static Expected<KernelProfile> from_json(const nlohmann::json& j);
  bool operator==(const KernelProfile&) const = default;
};

// How the containers of a file stand for one device.
struct ContainerCounts {
  std::uint64_t sass = 0;       // runnable: a SASS entry for the device's arch
  std::uint64_t ptx = 0;        // runnable only by JIT-compiling PTX
  std::uint64_t newer_only = 0; // every entry targets a newer arch than the device
  std::uint64_t older_only = 0; // every entry targets an older arch (SASS of an older major, …)
  std::uint64_t other = 0;      // a mix, or arch-specific (`a`/`f`) code of a neighbour
  [[nodiscard]] std::uint64_t runnable() const { return sass + ptx; }
  [[nodiscard]] std::uint64_t total() const { return sass + ptx + newer_only + older_only + other; }
  ContainerCounts& operator+=(const ContainerCounts& o);
};

struct FileCoverage {
  ContainerCounts registered; // .nv_fatbin / __nv_relfatbin / raw files: the runtime picks an image
  ContainerCounts embedded;   // fatbins in other sections, loaded by the library itself
  Verdict verdict = Verdict::none;
  [[nodiscard]] std::uint64_t runnable() const { return registered.runnable() + embedded.runnable(); }
  [[nodiscard]] std::uint64_t total() const { return registered.total() + embedded.total(); }
  // Runnable, but only through PTX JIT (slow first start; needs a driver that knows the PTX ISA).
  [[nodiscard]] bool jit_only() const { return runnable() > 0 && registered.sass + embedded.sass == 0; }
  [[nodiscard]] std::string via() const; // "sass", "ptx", "mixed", "none"
};

[[nodiscard]] FileCoverage coverage(const KernelProfile& p, specs::ComputeCapability cc);
[[nodiscard]] FileCoverage coverage(const KernelSet& ks, specs::ComputeCapability cc);

// One file of a package, by its path inside the package (or on disk).
struct ProfiledFile {
  std::string path;
  KernelProfile profile;
};

// Every SASS/PTX arch any file holds, sorted unique.
[[nodiscard]] std::vector<specs::GpuArch> archs_of(const std::vector<ProfiledFile>& files);

struct PackageCoverage {
  Verdict verdict = Verdict::none;
  std::uint64_t files = 0;                // files with GPU code
  ContainerCounts registered, embedded;   // summed over the files
  std::vector<std::string> none_files;    // files with no runnable entry
  std::vector<std::string> partial_files; // "path: runnable/total"
  bool jit_only = false;                  // runnable, but nowhere through SASS
  [[nodiscard]] std::uint64_t runnable() const { return registered.runnable() + embedded.runnable(); }
  [[nodiscard]] std::uint64_t total() const { return registered.total() + embedded.total(); }
  [[nodiscard]] bool has_gpu_code() const { return files > 0; }
};

// Files without GPU code do not count. A package with no GPU code at all has files == 0 (and the
// verdict `none` means nothing then: check has_gpu_code()).
[[nodiscard]] PackageCoverage package_coverage(const std::vector<ProfiledFile>& files, specs::ComputeCapability cc);

// What a package's GPU code is to its verdict: the one reading for doctor, plan and the apply gate
// (issue 56: frameworks, companions, their NVIDIA libraries and extensions judged alike).
enum class CodeRole {
  framework, // a framework's main package, companion or kernel package
  extension, // third-party GPU code beside a framework (xformers, flash-attn): read as a framework's
  library,   // a vendor library a framework's set requires (cuBLAS, cuSPARSELt): arch-specialised modules
};

enum class Reading {
  covered,     // every module has code that runs (or: no GPU code at all)
  jit_only,    // covered, but nowhere through SASS: slow first start
  gap,         // partial in a framework or an extension: a small test may pass and the full app fail
  specialised, // partial in a vendor library: its per-arch modules load only on their own arch
  not_covered, // no module runs on the device
};
[[nodiscard]] Reading read_coverage(const PackageCoverage& pc, CodeRole role);

// The one ZSTD rule (docs/kernels.md, Compression): a package whose GPU code is ZSTD-compressed cannot
// load it under a driver older than CUDA specs::kZstdMinCuda. False when the driver's CUDA is unknown.
// doctor reports it as an error; apply's gate warns before the smoke test, which then fails and rolls
// the set back.
[[nodiscard]] bool zstd_unloadable(const std::vector<ProfiledFile>& files, std::optional<specs::CudaVersion> driver_cuda);

} // namespace envfix::wheel
