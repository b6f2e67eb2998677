// Host code of the sample torch's GPU module, hipified in place (torch/ files are).
// Hipify is not idempotent: every run adds one more "hip/" to the driver-types include
// below, and from the second run on the file no longer compiles. Hipify a tree once.
#include <cuda_runtime_api.h>
#include "driver_types.h"

extern "C" int torch_sample_runtime_version() {
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) {
    return -1;
  }
  return version;
}
