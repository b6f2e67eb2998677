// Library entry points; on ROCm, setup.py compiles the hipified vision_hip.cpp instead.
#if defined(WITH_CUDA) || defined(WITH_HIP)
#include <cuda_runtime_api.h>
#endif

extern "C" int torchvision_sample_runtime_version() {
#if defined(WITH_CUDA) || defined(WITH_HIP)
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) {
    return -1;
  }
  return version;
#else
  return -1;
#endif
}
