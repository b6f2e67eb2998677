// apex's sample --cuda_ext kernel, written for CUDA and hipified by setup.py (extension mode).
#include <cuda_runtime.h>

__global__ void axpy_kernel(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] += a * x[i];
  }
}

extern "C" int apex_sample_axpy(float* y, const float* x, float a, int n) {
  float* d_x = nullptr;
  float* d_y = nullptr;
  if (cudaMalloc(&d_x, sizeof(float) * n) != cudaSuccess) {
    return -1;
  }
  if (cudaMalloc(&d_y, sizeof(float) * n) != cudaSuccess) {
    (void)cudaFree(d_x);
    return -1;
  }
  (void)cudaMemcpy(d_x, x, sizeof(float) * n, cudaMemcpyHostToDevice);
  (void)cudaMemcpy(d_y, y, sizeof(float) * n, cudaMemcpyHostToDevice);
  axpy_kernel<<<(n + 255) / 256, 256>>>(d_y, d_x, a, n);
  cudaError_t err = cudaGetLastError();
  (void)cudaMemcpy(y, d_y, sizeof(float) * n, cudaMemcpyDeviceToHost);
  (void)cudaFree(d_x);
  (void)cudaFree(d_y);
  return err == cudaSuccess ? 0 : static_cast<int>(err);
}
