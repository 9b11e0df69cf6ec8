#pragma once
// `doctor`: gather the facts on this machine (api::make_host, the installed kernels through the
// evidence store, the repro run in the target interpreter), then diagnosis::diagnose() judges them
// (diagnosis/diagnose.hpp); no printing.
#include "api/options.hpp"
#include "diagnosis/diagnose.hpp"
#include "util/error.hpp"

namespace envfix::api {

struct DoctorRequest {
  bool no_repro = false;
  int repro_timeout_s = 120;
  bool no_kernels = false;
};

// What diagnose() is told by the options: the framework asked, --no-repro/--no-kernels, and every
// option the printed fix must carry (--python, --gpu, --driver, the indexes, …).
[[nodiscard]] diagnosis::DiagnoseOptions diagnose_options(const Options& o, const DoctorRequest& r);

[[nodiscard]] Expected<diagnosis::DoctorReport> doctor(const Options& o, const DoctorRequest& r);

// A fix is a plan proven to resolve (issue 56): `request` planned in memory for `framework` with the
// same interpreter, indexes, GPUs and driver (one attempt: an unreachable index costs no retry waits).
// For a request that misses a covering release only by a companion its index lacks, `command` is the
// nearest request that resolves; else "".
struct ProvenFix {
  diagnosis::FixProof proof = diagnosis::FixProof::not_tried;
  util::Message detail; // what the planner said: the plan, the nearest request's why, or its error
  std::string command;  // FixProof::nearest: the command to print instead
};
[[nodiscard]] ProvenFix prove_fix(const Options& o, const std::string& framework, const std::vector<std::string>& request);

} // namespace envfix::api
