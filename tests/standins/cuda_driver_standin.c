/* A libcuda.so.1 stand-in: the driver calls the native core makes (csrc/backends/nvidia/cuda_driver.cpp)
 * for one fake device, with no contexts. Test controls (standin_*): a gate that holds the device
 * queries of the process that closed it until it is opened again, and which thread asked last.
 * Values follow cuda.h (CUresult 0 = CUDA_SUCCESS; the attribute numbers below). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
  ATTR_CLOCK_RATE = 13,
  ATTR_MULTIPROCESSOR_COUNT = 16,
  ATTR_MEMORY_CLOCK_RATE = 36,
  ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
  ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_open = PTHREAD_COND_INITIALIZER;
static pid_t gate_closed_by = 0; /* 0: open */
static atomic_long last_query_tid = 0;
static atomic_int queries = 0;
static atomic_int waiting = 0;

void standin_close_gate(void) {
  pthread_mutex_lock(&gate_lock);
  gate_closed_by = getpid();
  pthread_mutex_unlock(&gate_lock);
}

void standin_open_gate(void) {
  pthread_mutex_lock(&gate_lock);
  gate_closed_by = 0;
  pthread_cond_broadcast(&gate_open);
  pthread_mutex_unlock(&gate_lock);
}

long standin_last_query_tid(void) { return atomic_load(&last_query_tid); }
int standin_queries(void) { return atomic_load(&queries); }
int standin_waiting(void) { return atomic_load(&waiting); }

static void pass_gate(void) {
  pthread_mutex_lock(&gate_lock);
  if (gate_closed_by == getpid()) {
    atomic_fetch_add(&waiting, 1);
    while (gate_closed_by == getpid()) pthread_cond_wait(&gate_open, &gate_lock);
    atomic_fetch_sub(&waiting, 1);
  }
  pthread_mutex_unlock(&gate_lock);
}

int cuInit(unsigned flags) { (void)flags; return 0; }
int cuDriverGetVersion(int* version) { *version = 13000; return 0; }
int cuDeviceGetCount(int* count) { *count = 1; return 0; }
int cuDeviceGet(int* device, int ordinal) { *device = ordinal; return ordinal == 0 ? 0 : 101; }

int cuDeviceGetName(char* name, int length, int device) {
  (void)device;
  atomic_fetch_add(&queries, 1);
  atomic_store(&last_query_tid, (long)syscall(SYS_gettid));
  pass_gate();
  snprintf(name, (size_t)length, "%s", "Stand-in GPU");
  return 0;
}

int cuDeviceGetAttribute(int* value, int attribute, int device) {
  (void)device;
  switch (attribute) {
    case ATTR_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case ATTR_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case ATTR_MULTIPROCESSOR_COUNT: *value = 132; break;
    case ATTR_CLOCK_RATE: *value = 1980000; break;
    case ATTR_MEMORY_CLOCK_RATE: *value = 2619000; break;
    case ATTR_GLOBAL_MEMORY_BUS_WIDTH: *value = 6144; break;
    default: *value = 0;
  }
  return 0;
}

int cuCtxPushCurrent_v2(void* context) { (void)context; return 0; }
int cuCtxPopCurrent_v2(void** context) { *context = NULL; return 0; }
int cuCtxSynchronize(void) { return 0; }
int cuCtxGetCurrent(void** context) { *context = NULL; return 0; }
int cuCtxGetDevice(int* device) { *device = 0; return 0; }
