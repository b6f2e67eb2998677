/* The stand-in SDK's libhipblas.so: hipBLAS's handle life cycle (ROCm/hipBLAS,
 * library/include/hipblas.h; rocm-sdk-libraries ships it as lib/libhipblas.so.3), with the
 * real names, signatures and status codes: what torch's preload and the smoke check resolve.
 *
 * As the real one (rocBLAS backend, rocblas_create_handle), a handle belongs to the current
 * HIP device: hipblasCreate asks the HIP runtime (Debian's libamdhip64, which the stand-in SDK
 * uses as its amdhip64) for it, and without a device the handle is not created. No BLAS
 * routines: nothing in the sample calls them. */
#include <stdlib.h>

typedef enum {
  HIPBLAS_STATUS_SUCCESS = 0,
  HIPBLAS_STATUS_NOT_INITIALIZED = 1,
  HIPBLAS_STATUS_ALLOC_FAILED = 2,
  HIPBLAS_STATUS_INVALID_VALUE = 3,
  HIPBLAS_STATUS_HANDLE_IS_NULLPTR = 11,
} hipblasStatus_t;

typedef void *hipblasHandle_t;

/* hip_runtime_api.h: hipError_t hipGetDevice(int *deviceId); hipSuccess is 0. */
extern int hipGetDevice(int *device);

struct handle {
  int device;
};

hipblasStatus_t hipblasCreate(hipblasHandle_t *handle) {
  if (handle == NULL) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
  int device = -1;
  if (hipGetDevice(&device) != 0) return HIPBLAS_STATUS_NOT_INITIALIZED;
  struct handle *created = malloc(sizeof *created);
  if (created == NULL) return HIPBLAS_STATUS_ALLOC_FAILED;
  created->device = device;
  *handle = created;
  return HIPBLAS_STATUS_SUCCESS;
}

hipblasStatus_t hipblasDestroy(hipblasHandle_t handle) {
  if (handle == NULL) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
  free(handle);
  return HIPBLAS_STATUS_SUCCESS;
}

const char *hipblasStatusToString(hipblasStatus_t status) {
  switch (status) {
    case HIPBLAS_STATUS_SUCCESS: return "HIPBLAS_STATUS_SUCCESS";
    case HIPBLAS_STATUS_NOT_INITIALIZED: return "HIPBLAS_STATUS_NOT_INITIALIZED";
    case HIPBLAS_STATUS_ALLOC_FAILED: return "HIPBLAS_STATUS_ALLOC_FAILED";
    case HIPBLAS_STATUS_INVALID_VALUE: return "HIPBLAS_STATUS_INVALID_VALUE";
    case HIPBLAS_STATUS_HANDLE_IS_NULLPTR: return "HIPBLAS_STATUS_HANDLE_IS_NULLPTR";
    default: return "<undefined hipblasStatus_t value>";
  }
}
