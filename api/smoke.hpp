#pragma once
// The framework's smoke test (matrices SmokeTest: step A moves memory to the device, step B runs a
// real kernel, then each companion's own check), run in the target interpreter in a subprocess with
// CUDA_LAUNCH_BLOCKING=1 and a timeout. Used by `apply` as the transaction's verify step.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "matrices/knowledge.hpp"
#include "util/error.hpp"

namespace envfix::api {

enum class SmokeDevice { gpu, cpu };

struct SmokeStep {
  std::string name;   // "step A", "step B", "torchvision"; on the CPU: "CPU step", "torchvision (CPU)"
  std::string code;   // Python source
  SmokeDevice device = SmokeDevice::gpu;
};

struct SmokeReport {
  std::vector<std::string> passed; // step names, in order
  std::vector<std::string> stopped; // processes a step left running (pid, command), killed when it ended
};

// The steps to run on the GPU: A, B, then the check of every companion in `present` (normalized
// names). On the CPU: the framework's CPU step, then the CPU check of every present companion; empty
// when the matrices define no CPU step.
[[nodiscard]] std::vector<SmokeStep> smoke_steps(const matrices::SmokeTest& smoke, const std::vector<std::string>& present,
                                                 SmokeDevice device = SmokeDevice::gpu);

// `envfix verify`'s model layer as steps (matrices `smoke.model`, named "model: <name>"): every
// entry, except that one named "<companion>: …" runs only when that companion is in `present`.
[[nodiscard]] std::vector<SmokeStep> model_steps(const matrices::SmokeTest& smoke, const std::vector<std::string>& present,
                                                 SmokeDevice device = SmokeDevice::gpu);

// Runs the steps in order (CPU steps with CUDA_VISIBLE_DEVICES="", so they cannot touch a GPU;
// ENVFIX_DEVICE is "cuda" or "cpu" for the model scripts); the
// first failure is an ErrorCode::subprocess error whose causes carry the framework's own error text
// (the last lines of its stderr).
[[nodiscard]] Expected<SmokeReport> run_smoke(const std::filesystem::path& python, const std::vector<SmokeStep>& steps,
                                              std::chrono::milliseconds timeout);

// The exception line of a Python traceback ("RuntimeError: CUDA error: no kernel image …"); torch
// appends advice lines after it, so the last line alone is not the error. Falls back to the last
// line of stderr (or stdout).
[[nodiscard]] std::string exception_line(const std::string& out, const std::string& err);

// What a CUDA error line means: "missing-arch" (no kernel image / no binary for the GPU: the build
// lacks the GPU's arch), "out-of-memory", "cuda-error" (any other), "" when it names no CUDA error.
[[nodiscard]] std::string cuda_error_class(std::string_view line);

} // namespace envfix::api
