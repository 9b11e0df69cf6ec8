#include "diagnosis/cuda_error.hpp"

namespace envfix::diagnosis {

CudaError classify_cuda_error(std::string_view line) {
  auto has = [&](std::string_view s) { return line.find(s) != std::string_view::npos; };
  if (has("no kernel image") || has("NO_BINARY_FOR_GPU") || has("invalid device function")) return CudaError::missing_arch;
  if (has("out of memory") || has("CUDA_ERROR_OUT_OF_MEMORY")) return CudaError::out_of_memory;
  if (has("CUDA error") || has("CUDA_ERROR") || has("cudaError")) return CudaError::other;
  return CudaError::none;
}

std::string_view to_string(CudaError e) {
  switch (e) {
  case CudaError::none: return "";
  case CudaError::missing_arch: return "missing-arch";
  case CudaError::out_of_memory: return "out-of-memory";
  case CudaError::other: return "cuda-error";
  }
  return "";
}

} // namespace envfix::diagnosis
