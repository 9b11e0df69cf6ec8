#pragma once
// What the matrices say per GPU and framework, as values (`envfix matrix`, cli/command_matrix.cpp,
// renders them through api/matrix.hpp): the builds that run on a GPU and the newest stable ones.
// Pure queries of the knowledge; what binaries said is api::learned_builds'.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "matrices/knowledge.hpp"
#include "specs/gpu_arch.hpp"

namespace envfix::matrices {

// The matrices platform a --platform tag names ("manylinux_2_28_aarch64" → linux_aarch64); none given:
// linux_aarch64 for an integrated (Tegra) GPU, every Jetson being an aarch64 machine, else linux_x86_64.
[[nodiscard]] std::string matrix_platform(std::string_view platform_tag, specs::ComputeCapability cc);

// The names of an arch list ("sm_90", "compute_90"); none for an unknown list.
[[nodiscard]] std::vector<std::string> arch_names(const std::optional<std::vector<specs::GpuArch>>& list);

// Every release row of a framework, newest first (by its highest version; a row with none last).
[[nodiscard]] std::vector<const Release*> rows_newest_first(const Framework& f);
// The variant builds one row lists for `platform` (a row may be a range or a nightly line, which
// Knowledge::variants_for, asked for one version, does not cover).
[[nodiscard]] std::vector<VariantBuild> builds_of(const Framework& f, const Release& r, const std::string& platform);

// One build that runs on the GPU (natively, by PTX JIT, or unknown: no arch data).
struct GpuBuild {
  const Release* row = nullptr;
  VariantBuild build;
  RunKind runs = RunKind::none;
  std::optional<specs::GpuArch> via; // the entry that runs
  std::optional<std::string> min_driver, minor_compat_driver;
  std::optional<bool> driver_ok; // with a driver given
  bool stable = false;           // the row is on the stable channel
};
struct NewestStable {
  std::string version, variant;
};
struct GpuBuilds {
  std::vector<GpuBuild> builds;            // rows newest first
  std::optional<NewestStable> native, jit; // the newest stable release each way
  std::size_t unknown = 0;                 // builds without arch data (CUDA ones only)
  // The legacy ladder: the release that dropped the GPU (null when none did) and the last one that has
  // code for it on the platform.
  const SupportEnd* support_end = nullptr;
  std::optional<LastRelease> last_release;
};
// `driver` empty: no driver_ok. Non-CUDA builds without arch data are left out.
[[nodiscard]] GpuBuilds builds_for_gpu(const Knowledge& k, const Framework& f, specs::ComputeCapability cc,
                                       const std::string& platform, const std::string& os, const std::string& driver);

// `--gpu Q`: what the GPU is and the oldest driver that runs code for it on `os`.
struct GpuAnswer {
  ResolvedGpu gpu;      // a bare arch shows no product name
  std::string platform; // matrix_platform(--platform, the GPU)
  std::string os;       // "linux" | "windows"
  FirstToolkit first;
  std::optional<std::string> min_driver; // the first toolkit's release driver on `os`
  // No release driver known: the minor-version floor of the first toolkit's CUDA major ("" unknown).
  std::string minor_floor;
  std::vector<const L4tRelease*> l4t; // Jetson Linux releases for an integrated GPU
};
[[nodiscard]] Expected<GpuAnswer> answer_gpu(const Knowledge& k, std::string_view query, std::string_view platform_tag);

// `--framework F`: the framework, or not_found listing the known ones.
[[nodiscard]] Expected<const Framework*> framework_named(const Knowledge& k, std::string_view name);

// `--framework F --version V [--gpu Q]...`: everything the matrices say of one release.
struct PlatformAnswer {
  const ArchBuild* build = nullptr;
  std::vector<RunKind> runs_on; // per asked GPU, in order
};
struct VariantAnswer {
  const ReleaseVariant* row = nullptr;
  const Variant* variant = nullptr;     // null when the framework does not define it
  std::optional<std::string> index_url; // for the release's first channel (and the mirror)
  struct Drivers {
    std::optional<std::string> linux_min, windows_min, linux_minor, windows_minor;
  };
  std::optional<Drivers> drivers; // a CUDA variant's
  std::vector<PlatformAnswer> platforms;
};
struct ReleaseAnswer {
  const Release* row = nullptr;
  specs::Version version;
  std::string channel;                                                        // the row's first channel
  std::vector<std::pair<std::string, std::optional<std::string>>> companions; // framework order; none coupled: nullopt
  std::vector<ResolvedGpu> gpus;
  std::vector<VariantAnswer> variants;
};
// Errors: an unparsable version, a release the matrices lack (listing the known rows), an unknown GPU.
[[nodiscard]] Expected<ReleaseAnswer> answer_release(const Knowledge& k, const Framework& f, std::string_view version,
                                                     const std::vector<std::string>& gpu_queries, std::string_view mirror);

} // namespace envfix::matrices
