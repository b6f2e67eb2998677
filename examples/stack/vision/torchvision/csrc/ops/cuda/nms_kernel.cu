// torchvision's sample GPU kernel, written for CUDA and hipified by setup.py (extension
// mode: -> torchvision/csrc/ops/hip/nms_kernel.hip, kernel launches rewritten).
#include <cuda_runtime.h>

__global__ void threshold_kernel(const float* scores, int* keep, float threshold, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    keep[i] = scores[i] >= threshold ? 1 : 0;
  }
}

extern "C" int torchvision_sample_threshold(const float* scores, int* keep, float threshold, int n) {
  float* d_scores = nullptr;
  int* d_keep = nullptr;
  if (cudaMalloc(&d_scores, sizeof(float) * n) != cudaSuccess) {
    return -1;
  }
  if (cudaMalloc(&d_keep, sizeof(int) * n) != cudaSuccess) {
    (void)cudaFree(d_scores);
    return -1;
  }
  (void)cudaMemcpy(d_scores, scores, sizeof(float) * n, cudaMemcpyHostToDevice);
  threshold_kernel<<<(n + 255) / 256, 256, 0, 0>>>(d_scores, d_keep, threshold, n);
  cudaError_t err = cudaGetLastError();
  (void)cudaMemcpy(keep, d_keep, sizeof(int) * n, cudaMemcpyDeviceToHost);
  (void)cudaFree(d_scores);
  (void)cudaFree(d_keep);
  return err == cudaSuccess ? 0 : static_cast<int>(err);
}
