"""CUDA -> HIP mappings of the sample torch (a small excerpt of the shape of the real table).

Two tables, as in the v1 engine (torch <= 2.10):

* PYTORCH_MAP applies to pytorch files and extensions, matched at identifier boundaries
  (a key must follow and be followed by a non-word character); the longest key wins.
* CAFFE2_MAP applies to the other selected files (c10/cuda/...), matched anywhere, even
  inside longer identifiers; the longest key wins; identity entries block replacements.

`driver_types.h -> hip/driver_types.h` is the entry that makes a second run of build_amd.py
rewrite `hip/driver_types.h` into `hip/hip/driver_types.h` (pytorch#160579).
"""

PYTORCH_MAP = {
    # headers
    "cuda.h": "hip/hip_runtime.h",
    "cuda_runtime.h": "hip/hip_runtime.h",
    "cuda_runtime_api.h": "hip/hip_runtime_api.h",
    "driver_types.h": "hip/driver_types.h",
    "cuda_fp16.h": "hip/hip_fp16.h",
    "cublas_v2.h": "hipblas/hipblas.h",
    "curand.h": "hiprand/hiprand.h",
    "c10/cuda/CUDAStream.h": "c10/hip/HIPStream.h",
    # runtime API
    "cudaError_t": "hipError_t",
    "cudaSuccess": "hipSuccess",
    "cudaMalloc": "hipMalloc",
    "cudaFree": "hipFree",
    "cudaMemcpy": "hipMemcpy",
    "cudaMemcpyHostToDevice": "hipMemcpyHostToDevice",
    "cudaMemcpyDeviceToHost": "hipMemcpyDeviceToHost",
    "cudaGetLastError": "hipGetLastError",
    "cudaGetErrorString": "hipGetErrorString",
    "cudaGetDeviceCount": "hipGetDeviceCount",
    "cudaDeviceSynchronize": "hipDeviceSynchronize",
    "cudaRuntimeGetVersion": "hipRuntimeGetVersion",
    "cudaStream_t": "hipStream_t",
    "cublasHandle_t": "hipblasHandle_t",
    # c10
    "CUDAStream": "HIPStream",
    "getDefaultCUDAStream": "getDefaultHIPStream",
    # PyTorch specific
    "USE_CUDA": "USE_ROCM",
    "CUDA_VERSION": "TORCH_HIP_VERSION",
}

CAFFE2_MAP = {
    "cuda_runtime.h": "hip/hip_runtime.h",
    "cudaStream_t": "hipStream_t",
    "cudaGetDeviceCount": "hipGetDeviceCount",
    "cudaSuccess": "hipSuccess",
    "CUDAStream": "HIPStream",
    "C10_CUDA": "C10_HIP",
    "c10/cuda/": "c10/hip/",
    "/hip/": "/hip/",
}
