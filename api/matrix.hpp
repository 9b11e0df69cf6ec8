#pragma once
// `envfix matrix` answers as values (cli/command_matrix.cpp renders them as text and JSON): per GPU
// and framework, the builds the matrices say run there and the newest stable ones; per framework,
// the builds the evidence store learned from binaries on this machine, compared with the matrices'
// rows (what the binaries say outranks the table: docs/architecture.md, Kernel coverage).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "matrices/knowledge.hpp"
#include "specs/gpu_arch.hpp"
#include "specs/version.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::api {

// The matrices platform a --platform tag names ("manylinux_2_28_aarch64" → linux_aarch64); none given:
// linux_aarch64 for an integrated (Tegra) GPU, every Jetson being an aarch64 machine, else linux_x86_64.
[[nodiscard]] std::string matrix_platform(std::string_view platform_tag, specs::ComputeCapability cc);

// The names of an arch list ("sm_90", "compute_90"); none for an unknown list.
[[nodiscard]] std::vector<std::string> arch_names(const std::optional<std::vector<specs::GpuArch>>& list);

// Every release row of a framework, newest first (by its highest version; a row with none last).
[[nodiscard]] std::vector<const matrices::Release*> rows_newest_first(const matrices::Framework& f);
// The variant builds one row lists for `platform` (a row may be a range or a nightly line, which
// Knowledge::variants_for, asked for one version, does not cover).
[[nodiscard]] std::vector<matrices::VariantBuild> builds_of(const matrices::Framework& f, const matrices::Release& r,
                                                            const std::string& platform);

// One build that runs on the GPU (natively, by PTX JIT, or unknown: no arch data).
struct GpuBuild {
  const matrices::Release* row = nullptr;
  matrices::VariantBuild build;
  matrices::RunKind runs = matrices::RunKind::none;
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
[[nodiscard]] GpuBuilds builds_for_gpu(const matrices::Knowledge& k, const matrices::Framework& f, specs::ComputeCapability cc,
                                       const std::string& platform, const std::string& os, const std::string& driver);

// A learned build against the matrices' row for the same build (only the main package's archs are
// in the table).
struct RowComparison {
  enum class State { not_applicable, not_listed, no_arch_data, compared };
  State state = State::not_applicable; // not_applicable: a companion, or a build without a variant
  std::string row_label, where;        // where: ArchBuild::where ("" when the row lists no platform)
  matrices::Confidence confidence = matrices::Confidence::unverified;
  std::vector<std::string> table_sass, table_ptx;
  std::vector<std::string> table_only, binary_only; // SASS then PTX archs one side lists and the other lacks
  [[nodiscard]] bool agrees() const { return table_only.empty() && binary_only.empty(); }
};
struct LearnedBuild {
  wheel::BuildEvidence evidence;
  std::vector<std::string> sass, ptx; // over its files, in arch order
  std::uint64_t containers = 0;
  std::vector<wheel::PackageCoverage> coverage; // one per GPU asked, in order
  RowComparison row;
};
// Every build the evidence store under `cache_dir` (empty: the default cache) holds for the
// framework's packages (main package, companions, each variant's kernel packages) and `version`
// when given, sorted by key; none when there is no store.
[[nodiscard]] std::vector<LearnedBuild> learned_builds(const matrices::Knowledge& k, const matrices::Framework& f,
                                                       const std::string& cache_dir, const std::optional<specs::Version>& version,
                                                       const std::vector<specs::ComputeCapability>& gpus);

} // namespace envfix::api
