#pragma once
// Device queries for the sample torch (hipified to ATen/hip/HIPContext.h).
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>

namespace at {
namespace cuda {

inline int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    return 0;
  }
  return count;
}

} // namespace cuda
} // namespace at
