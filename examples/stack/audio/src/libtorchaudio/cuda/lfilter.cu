// torchaudio's sample GPU kernel. Like upstream torchaudio, the source is not hipified: it
// is written for both platforms and compiled as HIP with USE_ROCM defined.
#if defined(USE_ROCM)
#include <hip/hip_runtime.h>
#define GPU_API(name) hip##name
#else
#include <cuda_runtime.h>
#define GPU_API(name) cuda##name
#endif

__global__ void gain_kernel(float* samples, float gain, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    samples[i] *= gain;
  }
}

extern "C" int torchaudio_sample_gain(float* host, float gain, int n) {
  float* device = nullptr;
  size_t bytes = sizeof(float) * n;
  if (GPU_API(Malloc)(&device, bytes) != GPU_API(Success)) {
    return -1;
  }
  (void)GPU_API(Memcpy)(device, host, bytes, GPU_API(MemcpyHostToDevice));
  gain_kernel<<<(n + 255) / 256, 256>>>(device, gain, n);
  int status = static_cast<int>(GPU_API(GetLastError)());
  (void)GPU_API(Memcpy)(host, device, bytes, GPU_API(MemcpyDeviceToHost));
  (void)GPU_API(Free)(device);
  return status;
}
