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

} // namespace envfix::api
