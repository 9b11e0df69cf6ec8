#include "diagnosis/finding.hpp"

#include <array>

namespace envfix::diagnosis {

namespace {

struct CodeRow {
  FindingCode code;
  std::string_view name;
  bool fixable;
};

// One row per code: its stable spelling, and whether a reinstall fixes it.
constexpr std::array kCodes = {
    CodeRow{FindingCode::no_gpu, "no-gpu", false},
    CodeRow{FindingCode::no_driver, "no-driver", false},
    CodeRow{FindingCode::driver_too_old, "driver-too-old", false},
    CodeRow{FindingCode::arch_not_covered, "arch-not-covered", true},
    CodeRow{FindingCode::arch_partly_covered, "arch-partly-covered", true},
    CodeRow{FindingCode::ptx_jit_only, "ptx-jit-only", true},
    CodeRow{FindingCode::observed_contrary, "observed-contrary", false},
    CodeRow{FindingCode::zstd_needs_newer_driver, "zstd-needs-newer-driver", false},
    CodeRow{FindingCode::cpu_build_on_gpu_host, "cpu-build-on-gpu-host", true},
    CodeRow{FindingCode::cuda_runtime_missing, "cuda-runtime-missing", true},
    CodeRow{FindingCode::gpu_package_missing, "gpu-package-missing", true},
    CodeRow{FindingCode::no_gpu_kernels, "no-gpu-kernels", true},
    CodeRow{FindingCode::companion_mismatch, "companion-mismatch", true},
    CodeRow{FindingCode::mixed_variants, "mixed-variants", true},
    CodeRow{FindingCode::mixed_sources, "mixed-sources", true},
    CodeRow{FindingCode::duplicate_dist, "duplicate-dist", true},
    CodeRow{FindingCode::missing_record, "missing-record", true},
    CodeRow{FindingCode::pip_other_interpreter, "pip-other-interpreter", false},
    CodeRow{FindingCode::python_other_interpreter, "python-other-interpreter", false},
    CodeRow{FindingCode::toolkit_runtime_mismatch, "toolkit-runtime-mismatch", false},
    CodeRow{FindingCode::jetson, "jetson", false},
    CodeRow{FindingCode::wsl, "wsl", false},
    CodeRow{FindingCode::container, "container", false},
    CodeRow{FindingCode::stable_covers_gpu, "stable-covers-gpu", false},
    CodeRow{FindingCode::externally_managed, "externally-managed", true},
    CodeRow{FindingCode::repro_failed, "repro-failed", true},
    CodeRow{FindingCode::repro_not_here, "repro-not-here", false},
    CodeRow{FindingCode::framework_not_installed, "framework-not-installed", true},
    CodeRow{FindingCode::framework_assumed, "framework-assumed", false},
    CodeRow{FindingCode::extension_arch_not_covered, "extension-arch-not-covered", true},
    CodeRow{FindingCode::extension_arch_partly_covered, "extension-arch-partly-covered", true},
    CodeRow{FindingCode::extension_framework_mismatch, "extension-framework-mismatch", true},
    CodeRow{FindingCode::conda_owned, "conda-owned", false},
};

constexpr std::array kAll = [] {
  std::array<FindingCode, kCodes.size()> all{};
  for (std::size_t i = 0; i < kCodes.size(); ++i) all[i] = kCodes[i].code;
  return all;
}();

const CodeRow& row(FindingCode c) {
  for (const auto& r : kCodes)
    if (r.code == c) return r;
  return kCodes.front(); // unreachable: every enumerator has a row (tests/diagnosis/test_finding.cpp)
}

} // namespace

std::string_view to_string(FindingCode c) { return row(c).name; }

std::string_view to_string(Severity s) {
  switch (s) {
  case Severity::error: return "error";
  case Severity::warning: return "warning";
  case Severity::info: return "info";
  }
  return "info";
}

std::string_view to_string(Verdict v) {
  switch (v) {
  case Verdict::healthy: return "healthy";
  case Verdict::degraded: return "degraded";
  case Verdict::broken: return "broken";
  }
  return "broken";
}

std::string_view to_string(FixProof p) {
  switch (p) {
  case FixProof::not_tried: return "not-tried";
  case FixProof::proven: return "proven";
  case FixProof::nearest: return "nearest";
  case FixProof::failed: return "failed";
  case FixProof::unreachable: return "unreachable";
  }
  return "not-tried";
}

std::span<const FindingCode> all_finding_codes() { return kAll; }

bool fixable(FindingCode c) { return row(c).fixable; }

bool advisory(FindingCode c) { return c == FindingCode::pip_other_interpreter || c == FindingCode::python_other_interpreter; }

bool about_extension(FindingCode c) {
  return c == FindingCode::extension_arch_not_covered || c == FindingCode::extension_arch_partly_covered ||
         c == FindingCode::extension_framework_mismatch;
}

} // namespace envfix::diagnosis
