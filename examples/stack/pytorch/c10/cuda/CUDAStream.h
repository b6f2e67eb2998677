#pragma once
// A stream handle (hipified to c10/hip/HIPStream.h, with the unguarded Caffe2 table).
#include <cuda_runtime.h>

namespace c10 {
namespace cuda {

struct CUDAStream {
  cudaStream_t stream = nullptr;
};

inline CUDAStream getDefaultCUDAStream() {
  return CUDAStream{};
}

} // namespace cuda
} // namespace c10
