// The one real kernel of the fixture framework `tinyfw`. Built with different -gencode sets so
// that the same Python package is "broken" (sm_80 SASS on an sm_90 GPU), "JIT-only" (compute_80
// PTX) or "native" (sm_90 SASS).
#include <cuda_runtime.h>

__global__ void tinyfw_axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" {

// Step A: allocate and copy; needs a visible device and a working driver, no kernel image.
int tinyfw_to_device(int n) {
  float* d = nullptr;
  cudaError_t e = cudaMalloc(&d, n * sizeof(float));
  if (e != cudaSuccess) return e;
  e = cudaMemset(d, 0, n * sizeof(float));
  cudaFree(d);
  return e;
}

// Step B: run the kernel and check the numbers; fails with cudaErrorNoKernelImageForDevice (209)
// when the binary has no code for this GPU.
int tinyfw_axpy_check(int n, float* max_err) {
  float *x = nullptr, *y = nullptr;
  float* hx = new float[n];
  float* hy = new float[n];
  for (int i = 0; i < n; ++i) { hx[i] = float(i); hy[i] = 1.0f; }
  cudaError_t e = cudaMalloc(&x, n * sizeof(float));
  if (e == cudaSuccess) e = cudaMalloc(&y, n * sizeof(float));
  if (e == cudaSuccess) e = cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(y, hy, n * sizeof(float), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) {
    tinyfw_axpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
  float err = 0.0f;
  if (e == cudaSuccess)
    for (int i = 0; i < n; ++i) {
      float d = hy[i] - (2.0f * float(i) + 1.0f);
      if (d < 0) d = -d;
      if (d > err) err = d;
    }
  if (max_err) *max_err = err;
  cudaFree(x);
  cudaFree(y);
  delete[] hx;
  delete[] hy;
  return e;
}

const char* tinyfw_error_string(int code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

} // extern "C"
