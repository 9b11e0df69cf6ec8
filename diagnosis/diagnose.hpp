#pragma once
// doctor's judgement (docs/json.md "doctor"): four steps (1 hardware and driver, 2 framework
// version, variant, companions and their sources, 3 the repro's outcomes, 4 the matrices and the
// kernels really present), ending in a verdict and the exact `envfix apply` that fixes what was
// found. Facts come from probe/, knowledge from matrices/, kernels from wheel/; diagnose() only
// compares them, so a scenario gives it the facts directly (tests/scenarios/doctor/). api/doctor.cpp
// gathers the facts on a machine and runs the repro.
#include <string>
#include <vector>

#include "diagnosis/report.hpp"
#include "resolver/framework_selector.hpp"

namespace envfix::diagnosis {

// The command-line options the printed fix carries, so that it runs as printed against the same
// interpreter, indexes and knowledge (api/doctor.cpp fix_args builds them from the options).
struct FixArgs {
  std::string python;            // --python; replaced by --venv .venv for an externally managed target
  std::vector<std::string> rest; // every other option, in order (--gpu, --driver, --index-url, …)
};

struct DiagnoseOptions {
  std::string framework;        // --framework, or the default when detect_framework
  bool detect_framework = true; // no --framework: each framework installed (resolver/frameworks.hpp)
  bool no_repro = false;
  bool no_kernels = false;
  FixArgs fix;
};

[[nodiscard]] DoctorReport diagnose(const DiagnoseOptions& o, DoctorInputs in);

// The report's one fix: each framework's, joined by " && " (DoctorReport::fix).
[[nodiscard]] std::string joined_fix(const DoctorReport& r);

// The one builder of a printed envfix command (doctor's fixes, verify's): `args`, then the options
// that shaped the run (--venv .venv instead of --python for an externally managed target), `drop`
// and its value left out, each shell-quoted.
[[nodiscard]] std::string command_line(std::vector<std::string> args, const FixArgs& g, bool externally_managed,
                                       std::string_view drop = {});

// The reinstall of a framework's installed packages (main and companions, in `installed_names`'
// order; the main package when none is): verify's fix where no GPU is there to judge binaries by.
[[nodiscard]] std::vector<std::string> reinstall_request(const matrices::Framework& fw,
                                                         const std::vector<std::string>& installed_names);
[[nodiscard]] std::string reinstall_command(const matrices::Framework& fw, const std::vector<std::string>& installed_names,
                                            const FixArgs& g, bool externally_managed);

// What a failed plan offers when the covering release's index lacks a companion (issue 56, item 1):
// `nearest` (the request without it, already resolved to `chosen`, the main package's version) as a
// command with every option of the run and the gap's channel; `why` for doctor's fix line; `hint`
// for plan's error, ending in the hint it had (`rest`).
struct NearestOffer {
  std::string command;
  util::Message why, hint;
};
[[nodiscard]] NearestOffer companion_gap_offer(const resolver::CompanionGap& gap, const resolver::FrameworkRequest& nearest,
                                               std::string_view framework, std::string_view chosen, const FixArgs& g,
                                               bool externally_managed, const util::Message& rest);

} // namespace envfix::diagnosis
