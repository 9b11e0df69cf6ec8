#pragma once
// What doctor found (docs/json.md "doctor", Finding codes): a code, a severity, and the verdict they
// make. Codes are values, spelled only by to_string() for JSON and text; the table in docs/json.md
// mirrors all_finding_codes() (tests/diagnosis/test_finding.cpp holds the two together).
#include <span>
#include <string>
#include <string_view>

#include "util/message.hpp"

namespace envfix::diagnosis {

enum class FindingCode {
  no_gpu,
  no_driver,
  driver_too_old,
  arch_not_covered,
  arch_partly_covered,
  ptx_jit_only,
  observed_contrary,
  zstd_needs_newer_driver,
  cpu_build_on_gpu_host,
  cuda_runtime_missing,
  gpu_package_missing,
  no_gpu_kernels,
  companion_mismatch,
  mixed_variants,
  mixed_sources,
  duplicate_dist,
  missing_record,
  pip_other_interpreter,
  python_other_interpreter,
  toolkit_runtime_mismatch,
  jetson,
  wsl,
  container,
  stable_covers_gpu,
  externally_managed,
  repro_failed,
  repro_not_here,
  framework_not_installed,
  framework_assumed,
  extension_arch_not_covered,
  extension_arch_partly_covered,
  extension_framework_mismatch,
  conda_owned,
};

enum class Severity { error, warning, info }; // in this order in the report

// healthy: no error or warning; degraded: warnings only; broken: at least one error.
enum class Verdict { healthy, degraded, broken };

[[nodiscard]] std::string_view to_string(FindingCode c);
[[nodiscard]] std::string_view to_string(Severity s);
[[nodiscard]] std::string_view to_string(Verdict v);
[[nodiscard]] std::span<const FindingCode> all_finding_codes();

// A reinstall fixes it, so the fix command is printed for it (hardware and driver problems: no).
[[nodiscard]] bool fixable(FindingCode c);
// Advice about the user's shell, not the environment: shown, but it does not change the verdict.
[[nodiscard]] bool advisory(FindingCode c);
// About a GPU extension (the fix names the extension beside the framework).
[[nodiscard]] bool about_extension(FindingCode c);

struct Finding {
  FindingCode code = FindingCode::no_gpu;
  Severity severity = Severity::info;
  util::Message message; // by id (util/message.hpp): the catalog translates it where it is shown
  util::Message hint;
  std::string framework; // the framework it is about; "" for the host and the environment
  std::string package;   // the distribution it is about (normalized), where the fix must name it; "" none
};

// A fix is a plan proven to resolve (issue 56): what the planner said of it, in memory, with the
// same interpreter, indexes, GPUs and driver. docs/json.md, doctor `frameworks[].fix_proof`.
enum class FixProof {
  not_tried,   // no fix, --offline, or a fix that makes a new venv
  proven,      // the planner resolves it as printed
  nearest,     // it did not resolve; the fix shown is the nearest request that does
  failed,      // it does not resolve, and no nearer request does: proof_detail says why
  unreachable, // the index could not be asked (network): not proven
};
[[nodiscard]] std::string_view to_string(FixProof p); // "not-tried", "proven", "nearest", "failed", "unreachable"

} // namespace envfix::diagnosis
