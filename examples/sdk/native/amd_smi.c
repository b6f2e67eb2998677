/* The stand-in SDK's libamd_smi.so: the entry points of AMD SMI (ROCm/amdsmi,
 * include/amd_smi/amdsmi.h; the library rocm-sdk-core ships as lib/libamd_smi.so.26) that
 * torch's preload and the smoke checks touch, with the real names, signatures and status codes.
 *
 * It reads the same kernel interfaces the real library reads: the amdgpu module's state
 * (/sys/module/amdgpu/initstate; not "live": AMDSMI_STATUS_DRIVER_NOT_LOADED, as
 * AMDSmiSystem::init reports on a host without the driver) and the KFD topology
 * (/sys/class/kfd/kfd/topology/nodes/N: a node with a non-zero gpu_id is a GPU; its io_links
 * say which GPUs it reaches). Simplified: one socket per GPU, and no metrics. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
  AMDSMI_STATUS_SUCCESS = 0,
  AMDSMI_STATUS_INVAL = 1,
  AMDSMI_STATUS_NOT_SUPPORTED = 2,
  AMDSMI_STATUS_NOT_FOUND = 31,
  AMDSMI_STATUS_NOT_INIT = 32,
  AMDSMI_STATUS_DRIVER_NOT_LOADED = 34,
  AMDSMI_STATUS_INSUFFICIENT_SIZE = 41,
} amdsmi_status_t;

/* amdsmi_init_flags_t */
#define AMDSMI_INIT_AMD_GPUS (1ULL << 1)

typedef void *amdsmi_socket_handle;
typedef void *amdsmi_processor_handle;

typedef struct {
  uint32_t major;
  uint32_t minor;
  uint32_t release;
  const char *build;
} amdsmi_version_t;

#define MAX_GPUS 64
#define KFD_NODES "/sys/class/kfd/kfd/topology/nodes"

static int initialized = 0;
static uint32_t gpu_count = 0;
/* KFD node number of each GPU; a handle is (index + 1), never NULL. */
static unsigned gpu_nodes[MAX_GPUS];

static bool driver_live(void) {
  FILE *f = fopen("/sys/module/amdgpu/initstate", "r");
  char state[16] = {0};
  if (f == NULL) return false;
  bool live = fgets(state, sizeof state, f) != NULL && strncmp(state, "live", 4) == 0;
  fclose(f);
  return live;
}

static unsigned long read_number(const char *path) {
  FILE *f = fopen(path, "r");
  unsigned long value = 0;
  if (f == NULL) return 0;
  if (fscanf(f, "%lu", &value) != 1) value = 0;
  fclose(f);
  return value;
}

static int by_number(const void *a, const void *b) {
  unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
  return (x > y) - (x < y);
}

static void scan_gpus(void) {
  DIR *dir = opendir(KFD_NODES);
  struct dirent *entry;
  char path[512];
  gpu_count = 0;
  if (dir == NULL) return;
  while ((entry = readdir(dir)) != NULL && gpu_count < MAX_GPUS) {
    char *end;
    unsigned long node = strtoul(entry->d_name, &end, 10);
    if (entry->d_name[0] == '.' || *end != '\0') continue;
    snprintf(path, sizeof path, KFD_NODES "/%lu/gpu_id", node);
    if (read_number(path) != 0) gpu_nodes[gpu_count++] = (unsigned)node;
  }
  closedir(dir);
  qsort(gpu_nodes, gpu_count, sizeof gpu_nodes[0], by_number);
}

amdsmi_status_t amdsmi_init(uint64_t init_flags) {
  if (init_flags & AMDSMI_INIT_AMD_GPUS) {
    if (!driver_live()) return AMDSMI_STATUS_DRIVER_NOT_LOADED;
    scan_gpus();
  }
  initialized++;
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_shut_down(void) {
  if (!initialized) return AMDSMI_STATUS_NOT_INIT;
  if (--initialized == 0) gpu_count = 0;
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_lib_version(amdsmi_version_t *version) {
  if (version == NULL) return AMDSMI_STATUS_INVAL;
  version->major = 26;
  version->minor = 0;
  version->release = 0;
  version->build = "rockbuild stand-in";
  return AMDSMI_STATUS_SUCCESS;
}

/* With a NULL array: the count. Otherwise fills up to *count handles. */
amdsmi_status_t amdsmi_get_socket_handles(uint32_t *socket_count, amdsmi_socket_handle *socket_handles) {
  if (!initialized) return AMDSMI_STATUS_NOT_INIT;
  if (socket_count == NULL) return AMDSMI_STATUS_INVAL;
  if (socket_handles == NULL) {
    *socket_count = gpu_count;
    return AMDSMI_STATUS_SUCCESS;
  }
  uint32_t n = *socket_count < gpu_count ? *socket_count : gpu_count;
  for (uint32_t i = 0; i < n; i++) socket_handles[i] = (amdsmi_socket_handle)(uintptr_t)(i + 1);
  *socket_count = n;
  return AMDSMI_STATUS_SUCCESS;
}

static int gpu_index(void *handle) {
  uintptr_t value = (uintptr_t)handle;
  return value >= 1 && value <= gpu_count ? (int)(value - 1) : -1;
}

amdsmi_status_t amdsmi_get_processor_handles(amdsmi_socket_handle socket_handle, uint32_t *processor_count,
                                             amdsmi_processor_handle *processor_handles) {
  if (!initialized) return AMDSMI_STATUS_NOT_INIT;
  if (processor_count == NULL) return AMDSMI_STATUS_INVAL;
  /* A NULL socket: every processor of the system. */
  uint32_t first = 0, total = gpu_count;
  if (socket_handle != NULL) {
    int index = gpu_index(socket_handle);
    if (index < 0) return AMDSMI_STATUS_INVAL;
    first = (uint32_t)index;
    total = 1;
  }
  if (processor_handles == NULL) {
    *processor_count = total;
    return AMDSMI_STATUS_SUCCESS;
  }
  uint32_t n = *processor_count < total ? *processor_count : total;
  for (uint32_t i = 0; i < n; i++)
    processor_handles[i] = (amdsmi_processor_handle)(uintptr_t)(first + i + 1);
  *processor_count = n;
  return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_is_P2P_accessible(amdsmi_processor_handle processor_handle_src,
                                         amdsmi_processor_handle processor_handle_dst, bool *accessible) {
  if (!initialized) return AMDSMI_STATUS_NOT_INIT;
  int src = gpu_index(processor_handle_src), dst = gpu_index(processor_handle_dst);
  if (src < 0 || dst < 0 || accessible == NULL) return AMDSMI_STATUS_INVAL;
  *accessible = src == dst;
  if (src == dst) return AMDSMI_STATUS_SUCCESS;
  /* A KFD io_link from the source's node to the destination's. */
  char path[512];
  snprintf(path, sizeof path, KFD_NODES "/%u/io_links", gpu_nodes[src]);
  DIR *dir = opendir(path);
  struct dirent *entry;
  if (dir == NULL) return AMDSMI_STATUS_SUCCESS;
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] == '.') continue;
    char link[1024];
    snprintf(link, sizeof link, "%s/%s/node_to", path, entry->d_name);
    if (read_number(link) == gpu_nodes[dst]) {
      *accessible = true;
      break;
    }
  }
  closedir(dir);
  return AMDSMI_STATUS_SUCCESS;
}
