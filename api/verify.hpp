#pragma once
// envfix verify: the layered checks users are told to do by hand after a fix, in the target
// interpreter, on the GPU (on the CPU when there is none, saying so), each step with a timeout and
// its wall time (docs/json.md, verify):
//   repro  the framework's smoke test: step A (a host-to-device copy), step B (a kernel), companions;
//   model  small models built in code (matrices `smoke.model`), each naming the operator that failed;
//   app    the user's command: exit code, wall time, peak GPU memory (NVML), the first CUDA error
//          line classified ("no kernel image" → missing arch, with the fix command).
// cli/command_verify.cpp parses the options and renders the report.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/host.hpp"
#include "api/options.hpp"
#include "diagnosis/cuda_error.hpp"
#include "diagnosis/finding.hpp"
#include "util/error.hpp"
#include "util/message.hpp"

namespace envfix::api {

// repro and model are smoke/smoke.hpp's layers; app is the user's command.
enum class VerifyLayer { repro, model, app };
[[nodiscard]] std::string_view to_string(VerifyLayer l); // "repro", "model", "app"
[[nodiscard]] std::optional<VerifyLayer> parse_verify_layer(std::string_view s);

struct VerifyRequest {
  std::set<VerifyLayer> layers = {VerifyLayer::repro, VerifyLayer::model, VerifyLayer::app}; // app runs only with a command
  std::string app;                                                                           // the user's command (sh -c)
  std::chrono::seconds timeout{600};                                                         // each step, and the app
  // --sync: the app runs with CUDA_LAUNCH_BLOCKING=1, so a kernel error is raised at the launch that
  // failed, not at a later synchronising call (slower: every launch waits for its kernel).
  bool sync = false;
};

struct VerifyStep {
  VerifyLayer layer = VerifyLayer::repro;
  std::string name;
  bool kernel = false; // step B: the run that tells whether the GPU has code for the framework
  bool ok = false;
  double seconds = 0;
  std::string error; // the exception line (or "timed out after N s", "exit code N")
  std::string op;    // model layer: the operator it was running when it failed
  diagnosis::CudaError cuda_class = diagnosis::CudaError::none;
};

struct AppRun {
  std::string command;
  int exit_code = -1;
  double seconds = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> gpu_memory; // {peak, baseline} per GPU
  std::string memory_note;
  std::string error_line;
  diagnosis::CudaError cuda_class = diagnosis::CudaError::none;
  std::vector<std::string> stopped; // processes the app left running (pid, command), killed when it exited
  std::string fix;        // missing-arch: the envfix command that installs a build with kernels for these GPUs (doctor's)
  util::Message fix_note; // missing-arch with nothing to reinstall: the installed binaries cover the GPUs; where to look
  diagnosis::FixProof fix_proof = diagnosis::FixProof::not_tried; // what the planner made of `fix` (api/doctor.hpp prove_fix)
  util::Message fix_proof_detail;
  bool sync = false;        // ran with CUDA_LAUNCH_BLOCKING=1
  std::string where;        // the source line the traceback ends at (`File "x.py", line 7, in f: y = op(x)`)
  util::Message async_note; // a CUDA error without --sync: why that line may be the wrong one, and what to run
};

struct VerifyReport {
  std::string framework;
  util::Message framework_note; // detection said something (several installed, none installed)
  Host host;
  std::filesystem::path python;
  bool cpu = false;          // the checks ran on the CPU
  util::Message device_note; // why, when on the CPU
  std::set<VerifyLayer> layers;
  std::vector<VerifyStep> steps;
  int interpreters = 0; // Python processes the repro and model steps ran in (smoke/smoke.hpp)
  std::optional<AppRun> app;
  [[nodiscard]] bool ok() const;
};

// Told as verify goes, so a person sees each step when it ends. Every method has a no-op default.
class VerifyReporter {
public:
  VerifyReporter() = default;
  VerifyReporter(const VerifyReporter&) = delete;
  VerifyReporter& operator=(const VerifyReporter&) = delete;
  virtual ~VerifyReporter() = default;
  virtual void started(const VerifyReport& /*host, device, framework chosen*/) {}
  virtual void layer(VerifyLayer) {}
  virtual void note(const util::Message& /*text*/) {}
  virtual void step(const VerifyStep&) {}
  virtual void app(const AppRun&) {}
};

// The framework is the one asked (--framework) or the one installed (resolver/frameworks.hpp); it must
// be installed in the target. Fails (exit 2) only when verify cannot run; a failed step is in the report.
[[nodiscard]] Expected<VerifyReport> verify(const Options& o, const VerifyRequest& r, VerifyReporter& rep);

} // namespace envfix::api
