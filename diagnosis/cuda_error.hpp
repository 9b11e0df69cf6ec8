#pragma once
// What a CUDA error line means, as the repro (doctor), verify and the smoke test read it.
#include <string_view>

namespace envfix::diagnosis {

enum class CudaError {
  none,          // the line names no CUDA error
  missing_arch,  // "no kernel image", NO_BINARY_FOR_GPU, "invalid device function": the build lacks the GPU's arch
  out_of_memory, // "out of memory", CUDA_ERROR_OUT_OF_MEMORY
  other,         // any other CUDA error
};

[[nodiscard]] CudaError classify_cuda_error(std::string_view line);
// missing-arch | out-of-memory | cuda-error | "" (docs/json.md "verify", `class`).
[[nodiscard]] std::string_view to_string(CudaError e);

} // namespace envfix::diagnosis
