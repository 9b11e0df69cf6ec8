#pragma once
// The framework's smoke test (matrices SmokeTest: step A moves memory to the device, step B runs a
// real kernel, then each companion's own check, then verify's model checks), run in the target
// interpreter with CUDA_LAUNCH_BLOCKING=1 and a timeout per step. Used by `apply` as the
// transaction's verify step, by `verify` (its repro and model layers) and by doctor's repro.
//
// The steps run in ONE interpreter where they can (smoke/run.cpp): torch is imported and CUDA
// initialised once instead of once per step. Each step is timed and its failure reported apart; a
// step that fails, crashes the interpreter or hangs past the timeout ends it (killed), and the steps
// after it run in a fresh one, so that one step's broken CUDA context never fails the next.
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "matrices/knowledge.hpp"
#include "util/error.hpp"
#include "util/subprocess.hpp"

namespace envfix::smoke {

enum class SmokeDevice { gpu, cpu };

// What a step checks: step A a host-to-device copy, step B a kernel (the run that tells whether the
// GPU has code), the CPU step, a companion's own check, a model of verify's model layer.
enum class StepKind { copy, kernel, cpu, companion, model };

struct SmokeStep {
  std::string name; // "step A", "step B", "torchvision"; on the CPU: "CPU step", "torchvision (CPU)"
  std::string code; // Python source
  SmokeDevice device = SmokeDevice::gpu;
  StepKind kind = StepKind::companion;
};

struct StepTime {
  std::string name;
  double seconds = 0;
};

struct SmokeReport {
  std::vector<std::string> passed;  // step names, in order
  std::vector<std::string> stopped; // processes a step left running (pid, command), killed when it ended
  std::vector<StepTime> seconds;    // every step run, in order
  int interpreters = 0;             // Python processes started for them
};

// One step's outcome (run_steps).
struct StepRun {
  std::string name;
  bool ok = false;
  bool timed_out = false;
  int exit_code = 0;   // the step's SystemExit code, or the exit status of the interpreter it ended
  int term_signal = 0; // the signal that ended the interpreter while the step ran
  // From the end of the step before it (the first of an interpreter: from its start) to its end.
  double seconds = 0;
  std::string out, err;                       // what the step printed (the last MiB of each)
  std::vector<util::LeftoverProcess> stopped; // left running by the interpreter this step ended, stopped
};

struct SmokeRun {
  std::vector<StepRun> steps;                 // in order; fewer than asked when stopped at a failure
  std::vector<util::LeftoverProcess> stopped; // every process the interpreters left running, stopped
  int interpreters = 0;
};

struct SmokeRunOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(600)}; // each step
  bool stop_at_failure = true;                                  // false: every step runs, a fresh interpreter after each failure
  std::function<bool()> cancel;                // polled: true kills the running step (the run fails: interrupted)
  std::function<void(const StepRun&)> on_step; // told as each step ends
};

// Runs the steps in order, consecutive steps of one device in one interpreter (CPU steps with
// CUDA_VISIBLE_DEVICES="", so they cannot touch a GPU; ENVFIX_DEVICE is "cuda" or "cpu" for the
// model scripts), each in its own fresh __main__. Fails when an interpreter cannot be started or
// `cancel` said so; a failed step is data in the result.
[[nodiscard]] Expected<SmokeRun> run_steps(const std::filesystem::path& python, const std::vector<SmokeStep>& steps,
                                           const SmokeRunOptions& options);

// The steps to run on the GPU: A, B, then the check of every companion in `present` (normalized
// names). On the CPU: the framework's CPU step, then the CPU check of every present companion; empty
// when the matrices define no CPU step.
[[nodiscard]] std::vector<SmokeStep> smoke_steps(const matrices::SmokeTest& smoke, const std::vector<std::string>& present,
                                                 SmokeDevice device = SmokeDevice::gpu);

// Where a smoke test runs, for apply's verify step and `envfix verify` alike: on the GPU, unless the
// set is a CPU build (a CUDA step would fail there for the wrong reason), the GPUs are planned (--gpu:
// not this machine's) or the host has none; the first that holds is the reason.
enum class CpuReason { none, cpu_build, planned_gpus, no_gpu };
[[nodiscard]] CpuReason cpu_reason(bool has_gpu, bool gpus_planned, bool cpu_build);
// "CPU build", "planned GPUs (--gpu) are not this machine's", "no GPU"; "" for none.
[[nodiscard]] util::Message describe(CpuReason r);

// `envfix verify`'s layers 1 and 2, which apply's verify step runs too.
enum class Layer { repro, model };
[[nodiscard]] std::string_view to_string(Layer l); // "repro", "model"
[[nodiscard]] std::optional<Layer> parse_layer(std::string_view s);
// One layer's steps: smoke_steps for repro, model_steps for model.
[[nodiscard]] std::vector<SmokeStep> layer_steps(Layer l, const matrices::SmokeTest& smoke,
                                                 const std::vector<std::string>& present, SmokeDevice device);

// What apply runs as its transaction's verify step, and the note that says where or why not.
struct ApplySmokeRequest {
  const matrices::Framework* framework = nullptr; // none: a plain requirement set
  bool cpu_build = false;                         // the set's variant is a CPU build
  std::vector<std::string> present;               // normalized names of the new set and the installed
  std::vector<Layer> layers{Layer::repro, Layer::model};
  bool has_gpu = false, gpus_planned = false;
  bool skipped = false; // --no-verify
};
struct ApplySmoke {
  std::vector<SmokeStep> steps;
  CpuReason cpu = CpuReason::none; // set when the steps run on the CPU
  util::Message note;              // why it was skipped, or where it ran; empty on the GPU
};
[[nodiscard]] ApplySmoke plan_apply_smoke(const ApplySmokeRequest& r);

// `envfix verify`'s model layer as steps (matrices `smoke.model`, named "model: <name>"): every
// entry, except that one named "<companion>: …" runs only when that companion is in `present`.
[[nodiscard]] std::vector<SmokeStep> model_steps(const matrices::SmokeTest& smoke, const std::vector<std::string>& present,
                                                 SmokeDevice device = SmokeDevice::gpu);

// run_steps up to the first failure, which is an ErrorCode::subprocess error whose causes carry the
// framework's own error text (the last lines of its stderr). SIGINT/SIGTERM during a transaction
// (installer::interrupt_signal) stops it.
[[nodiscard]] Expected<SmokeReport> run_smoke(const std::filesystem::path& python, const std::vector<SmokeStep>& steps,
                                              std::chrono::milliseconds timeout);

// What a failed step's error was, in one line: "timed out after N s", its exception line, "killed by
// signal N (name)" with the last line it wrote to stderr, or "exit code N"; "" for a step that passed.
[[nodiscard]] std::string failure_text(const StepRun& s, std::chrono::milliseconds timeout);

// The exception line of a Python traceback ("RuntimeError: CUDA error: no kernel image …"); torch
// appends advice lines after it, so the last line alone is not the error. Falls back to the last
// line of stderr (or stdout).
[[nodiscard]] std::string exception_line(const std::string& out, const std::string& err);

} // namespace envfix::smoke
