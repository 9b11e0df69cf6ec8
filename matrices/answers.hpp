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
};
// `driver` empty: no driver_ok. Non-CUDA builds without arch data are left out.
[[nodiscard]] GpuBuilds builds_for_gpu(const Knowledge& k, const Framework& f, specs::ComputeCapability cc,
                                       const std::string& platform, const std::string& os, const std::string& driver);

} // namespace envfix::matrices
