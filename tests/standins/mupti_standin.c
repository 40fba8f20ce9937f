/* A stand-in for libmupti.so (Moore Threads) and the libmusa calls the mthreads backend
 * makes, built by the tests (tests/standins/build.py).
 *
 * It exports the MUPTI functions with their documented signatures (mupti.h: a CUPTI-shaped API)
 * and records in the documented layout (MUpti_ActivityKernel6, MUpti_ActivityMemcpy4,
 * MUpti_ActivityMemset3: CUPTI's layouts of the same names), plus muGetExportTable and the
 * device / function / occupancy queries of libmusa. Test-only functions (standin_*) play the
 * MUSA runtime: a "launch" calls the subscriber's callback on enter and exit with a fresh
 * correlation id and the launch's muLaunchKernel parameters, and writes an activity record into
 * a buffer obtained from the registered buffer-request callback; full buffers, and every buffer
 * at a forced flush, go back through the buffer-complete callback. Record times are on a clock
 * of their own (host monotonic + 1000 s). The documented MUSA 4.3 hazards can be switched on:
 * records with zero timestamps (as a forced flush can hand over kernels it has no time for), a
 * vendor clock at another rate than the host's, a non-forced flush that delivers, one
 * subscriber per process, and a missing driver export table. As reported for MUSA 4.3's MUPTI by
 * hardware-tested prior art: a second forced flush with no API call since the last one blocks
 * (for MUPTI_STANDIN_BLOCK_S seconds, default 30, counted; the real one can wait forever), and a
 * buffer the library retains through teardown can come back corrupted (switched on by a test).
 * Also switchable: callbacks with no context set, records of kinds this build does not know, and
 * a delivery whose last record is cut short.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "activity_buffer.h"

#define EXPORT __attribute__((visibility("default")))
#define RECORD __attribute__((__packed__)) __attribute__((aligned(8)))

/* ---- the documented interface ---- */
enum { MUPTI_SUCCESS = 0, MUPTI_ERROR_INVALID_PARAMETER = 1, MUPTI_ERROR_MAX_LIMIT_REACHED = 12,
       MUPTI_ERROR_NOT_INITIALIZED = 15, MUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39 };
enum { KIND_MEMCPY = 1, KIND_MEMSET = 2, KIND_KERNEL = 3, KIND_CONCURRENT_KERNEL = 10 };
enum { DOMAIN_DRIVER = 1, DOMAIN_RUNTIME = 2 };
enum { SITE_ENTER = 0, SITE_EXIT = 1 };
#define FLUSH_FORCED 1u

typedef void (*callback_fn)(void* userdata, uint32_t domain, uint32_t cbid, const void* data);
typedef void (*request_fn)(uint8_t** buffer, size_t* size, size_t* max_records);
typedef void (*complete_fn)(void* context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid);

typedef struct {
  uint32_t callbackSite;
  const char* functionName;
  const void* functionParams;
  void* functionReturnValue;
  const char* symbolName;
  void* context;
  uint32_t contextUid;
  uint64_t* correlationData;
  uint32_t correlationId;
} callback_data;

typedef struct RECORD {
  uint32_t kind;
  uint8_t cacheConfig, sharedMemoryConfig;
  uint16_t registersPerThread;
  uint32_t partitionedGlobalCacheRequested, partitionedGlobalCacheExecuted;
  uint64_t start, end, completed;
  uint32_t deviceId, contextId, streamId;
  int32_t gridX, gridY, gridZ, blockX, blockY, blockZ;
  int32_t staticSharedMemory, dynamicSharedMemory;
  uint32_t localMemoryPerThread, localMemoryTotal, correlationId;
  int64_t gridId;
  const char* name;
  void* reserved0;
  uint64_t queued, submitted;
  uint8_t launchType, isSharedMemoryCarveoutRequested, sharedMemoryCarveoutRequested, padding;
  uint32_t sharedMemoryExecuted;
  uint64_t graphNodeId;
  uint32_t shmemLimitConfig, graphId;
  void* pAccessPolicyWindow;
} kernel6;

typedef struct RECORD {
  uint32_t kind;
  uint8_t copyKind, srcKind, dstKind, flags;
  uint64_t bytes, start, end;
  uint32_t deviceId, contextId, streamId, correlationId, runtimeCorrelationId, pad;
  void* reserved0;
  uint64_t graphNodeId;
  uint32_t graphId, padding;
} memcpy4;

typedef struct RECORD {
  uint32_t kind, value;
  uint64_t bytes, start, end;
  uint32_t deviceId, contextId, streamId, correlationId;
  uint16_t flags, memoryKind;
  uint32_t pad;
  void* reserved0;
  uint64_t graphNodeId;
  uint32_t graphId, padding;
} memset3;

typedef struct {
  void* f;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void* hStream;
  void** kernelParams;
  void** extra;
} launch_params;

/* ---- the stand-in's callback ids (deliberately not CUPTI's numbers) ---- */
typedef struct {
  uint32_t domain, cbid;
  const char* name;
} api_name;
static const api_name kApis[] = {
    {DOMAIN_DRIVER, 17, "muMemAlloc"},          {DOMAIN_DRIVER, 301, "muLaunchKernel"},
    {DOMAIN_DRIVER, 302, "muLaunchKernel_ptsz"}, {DOMAIN_DRIVER, 330, "muMemcpyHtoDAsync"},
    {DOMAIN_DRIVER, 340, "muMemsetD32Async"},    {DOMAIN_DRIVER, 350, "muLaunchHostFunc"},
    {DOMAIN_DRIVER, 360, "muGraphLaunch"},       {DOMAIN_RUNTIME, 5, "musaMalloc"},
    {DOMAIN_RUNTIME, 211, "musaLaunchKernel"},   {DOMAIN_RUNTIME, 41, "musaMemcpyAsync"},
};
#define NUM_APIS ((int)(sizeof(kApis) / sizeof(kApis[0])))

/* ---- the stand-in's kernels (functions) and device ---- */
typedef struct {
  char name[64];
  int regs, static_smem, local, max_blocks;
} function;
#define MAX_FUNCTIONS 64
static function g_functions[MAX_FUNCTIONS];
static int g_num_functions;
static int g_device_attr[128];

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static callback_fn g_cb;
static void* g_cb_arg;
static int g_subscribed, g_held_by_other, g_no_export_table, g_launch_attributes;
static uint8_t g_enabled_cb[3][512];
static int g_kinds[16];
static request_fn g_request;
static complete_fn g_complete;
static activity_buffer g_buffer;
static uint32_t g_next_corr = 5000;
static int g_zero_next, g_drop_next, g_refused_kind;
static uint64_t g_dropped, g_unforced_flushes, g_finalize_calls, g_syncs;
static int g_flushed, g_called_since_flush;  /* a forced flush since subscribing; an API call since */
static uint64_t g_blocked_flushes, g_corrupted, g_spoilt_reads;
static uint8_t* g_spoilt;  /* the buffer handed back spoilt at teardown */
static int g_null_context, g_corrupt_at_teardown;
static size_t g_truncate_next;
static char g_context_storage;
#define CONTEXT ((void*)&g_context_storage)
#define VENDOR_CLOCK_OFFSET 1000000000000ull

/* The vendor clock may run at another rate than the host's (standin_clock_rate_ppm): from the
 * moment that is set, it gains `ppm` ns per ms of host time. */
static int64_t g_rate_ppm;
static uint64_t g_rate_since;

static uint64_t host_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t vendor_now(void) {
  uint64_t now = host_now();
  int64_t gained = g_rate_ppm ? (int64_t)(now - g_rate_since) / 1000000 * g_rate_ppm : 0;
  return now + VENDOR_CLOCK_OFFSET + (uint64_t)gained;
}

/* Hands a buffer taken out under the lock back to the profiler (called without the lock). */
static void hand_back(taken_buffer t, complete_fn complete) {
  pthread_mutex_lock(&g_lock);
  size_t cut = g_truncate_next < t.used ? g_truncate_next : 0;
  if (t.buf) g_truncate_next = 0;
  pthread_mutex_unlock(&g_lock);
  t.used -= cut;
  if (t.buf && complete) complete(CONTEXT, 0, t.buf, t.size, t.used);
}

static void deliver(void) {
  pthread_mutex_lock(&g_lock);
  taken_buffer t = activity_buffer_take(&g_buffer);
  complete_fn complete = g_complete;
  pthread_mutex_unlock(&g_lock);
  hand_back(t, complete);
}

/* Appends one record (tests/standins/activity_buffer.h); a declined buffer loses it, counted. */
static void write_record(const void* record, size_t size, uint32_t kind) {
  taken_buffer full = {NULL, 0, 0};
  pthread_mutex_lock(&g_lock);
  if (kind >= 16 || !g_kinds[kind] || !g_request) {
    pthread_mutex_unlock(&g_lock);
    return;
  }
  if (g_drop_next > 0) {
    --g_drop_next;
    ++g_dropped;
    pthread_mutex_unlock(&g_lock);
    return;
  }
  if (!activity_buffer_append(&g_buffer, g_request, record, size, 8, sizeof(kernel6), &full)) ++g_dropped;
  complete_fn complete = g_complete;
  pthread_mutex_unlock(&g_lock);
  hand_back(full, complete);
}

static void stamp(uint64_t* start, uint64_t* end, uint64_t duration) {
  *start = vendor_now() + 1000;
  *end = *start + duration;
  pthread_mutex_lock(&g_lock);
  if (g_zero_next > 0) {
    --g_zero_next;
    *start = 0;
    *end = 0;
  }
  pthread_mutex_unlock(&g_lock);
}

static const api_name* find_api(const char* name) {
  for (int i = 0; i < NUM_APIS; ++i)
    if (strcmp(kApis[i].name, name) == 0) return &kApis[i];
  return NULL;
}

/* Calls the subscriber for `api` at `site` if its callback id is enabled. */
static void callback(const api_name* api, uint32_t site, uint32_t corr, const void* params) {
  callback_data d;
  memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionName = api->name;
  d.functionParams = params;
  d.correlationId = corr;
  pthread_mutex_lock(&g_lock);
  d.context = g_null_context ? NULL : CONTEXT;
  g_called_since_flush = 1;
  callback_fn cb = g_subscribed && g_enabled_cb[api->domain][api->cbid] ? g_cb : NULL;
  void* arg = g_cb_arg;
  pthread_mutex_unlock(&g_lock);
  if (cb) cb(arg, api->domain, api->cbid, &d);
}

static uint32_t next_correlation(void) {
  pthread_mutex_lock(&g_lock);
  uint32_t corr = g_next_corr++;
  pthread_mutex_unlock(&g_lock);
  return corr;
}

/* ---- MUPTI ---- */
EXPORT int muptiGetVersion(uint32_t* v) { *v = 43; return MUPTI_SUCCESS; }
EXPORT int muptiGetResultString(int r, const char** s) {
  *s = r == MUPTI_SUCCESS ? "MUPTI_SUCCESS"
       : r == MUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "MUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
       : r == MUPTI_ERROR_NOT_INITIALIZED ? "MUPTI_ERROR_NOT_INITIALIZED" : "MUPTI_ERROR_UNKNOWN";
  return MUPTI_SUCCESS;
}
EXPORT int muptiSubscribe(void** handle, callback_fn cb, void* arg) {
  int rc = MUPTI_SUCCESS;
  pthread_mutex_lock(&g_lock);
  if (g_no_export_table) rc = MUPTI_ERROR_NOT_INITIALIZED;
  else if (g_subscribed || g_held_by_other) rc = MUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  else {
    g_subscribed = 1;
    g_cb = cb;
    g_cb_arg = arg;
    g_flushed = 0;
    *handle = (void*)&g_subscribed;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}
EXPORT int muptiUnsubscribe(void* handle) {
  pthread_mutex_lock(&g_lock);
  g_subscribed = 0;
  g_cb = NULL;
  memset(g_enabled_cb, 0, sizeof g_enabled_cb);
  pthread_mutex_unlock(&g_lock);
  return MUPTI_SUCCESS;
}
EXPORT int muptiEnableCallback(uint32_t enable, void* handle, uint32_t domain, uint32_t cbid) {
  if (domain > 2 || cbid >= 512) return MUPTI_ERROR_INVALID_PARAMETER;
  g_enabled_cb[domain][cbid] = (uint8_t)enable;
  return MUPTI_SUCCESS;
}
EXPORT int muptiGetCallbackName(uint32_t domain, uint32_t cbid, const char** name) {
  for (int i = 0; i < NUM_APIS; ++i)
    if (kApis[i].domain == domain && kApis[i].cbid == cbid) {
      *name = kApis[i].name;
      return MUPTI_SUCCESS;
    }
  return MUPTI_ERROR_INVALID_PARAMETER;
}
EXPORT int muptiActivityRegisterCallbacks(request_fn request, complete_fn complete) {
  g_request = request;
  g_complete = complete;
  return MUPTI_SUCCESS;
}
EXPORT int muptiActivityEnable(uint32_t kind) {
  if (kind >= 16 || (int)kind == g_refused_kind) return MUPTI_ERROR_INVALID_PARAMETER;
  g_kinds[kind] = 1;
  return MUPTI_SUCCESS;
}
EXPORT int muptiActivityDisable(uint32_t kind) {
  if (kind >= 16) return MUPTI_ERROR_INVALID_PARAMETER;
  g_kinds[kind] = 0;
  pthread_mutex_lock(&g_lock);
  taken_buffer t = {NULL, 0, 0};
  if (g_corrupt_at_teardown && g_request) {  /* the buffer retained through teardown, spoilt */
    g_corrupt_at_teardown = 0;
    size_t max_records = 0;
    g_request(&t.buf, &t.size, &max_records);
    if (t.buf && t.size >= sizeof(kernel6)) {
      kernel6 k;
      memset(&k, 0xA5, sizeof k);  /* a kernel's kind, the rest overwritten */
      k.kind = KIND_CONCURRENT_KERNEL;
      k.name = "spoilt";
      memcpy(t.buf, &k, sizeof k);
      t.used = sizeof k;
      ++g_corrupted;
      g_spoilt = t.buf;
    }
  }
  complete_fn complete = g_complete;
  pthread_mutex_unlock(&g_lock);
  if (t.buf && complete) complete(CONTEXT, 0, t.buf, t.size, t.used);
  return MUPTI_SUCCESS;
}
static size_t record_size(uint32_t kind) {
  switch (kind) {
    case KIND_MEMCPY: return sizeof(memcpy4);
    case KIND_MEMSET: return sizeof(memset3);
    case KIND_KERNEL: case KIND_CONCURRENT_KERNEL: return sizeof(kernel6);
    default: return 16;  /* kinds the profiler does not know: a short record of their own */
  }
}
EXPORT int muptiActivityGetNextRecord(uint8_t* buffer, size_t valid, void** record) {
  if (buffer == g_spoilt && !*record) ++g_spoilt_reads;
  uint8_t* next = *record ? (uint8_t*)*record + ((record_size(*(uint32_t*)*record) + 7) & ~(size_t)7) : buffer;
  if (next >= buffer + valid) return MUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return MUPTI_SUCCESS;
}
EXPORT int muptiActivityGetNumDroppedRecords(void* context, uint32_t stream, size_t* dropped) {
  pthread_mutex_lock(&g_lock);
  *dropped = g_dropped;
  g_dropped = 0;
  pthread_mutex_unlock(&g_lock);
  return MUPTI_SUCCESS;
}
EXPORT int muptiActivityFlushAll(uint32_t flag) {
  if (!(flag & FLUSH_FORCED)) { /* delivers the buffers as a forced one does (counted: never made) */
    pthread_mutex_lock(&g_lock);
    ++g_unforced_flushes;
    pthread_mutex_unlock(&g_lock);
    deliver();
    return MUPTI_SUCCESS;
  }
  pthread_mutex_lock(&g_lock);
  int blocks = g_flushed && !g_called_since_flush;
  g_flushed = 1, g_called_since_flush = 0;
  if (blocks) ++g_blocked_flushes;
  pthread_mutex_unlock(&g_lock);
  if (blocks) {  /* MUSA 4.3: the second forced flush in a row can wait forever */
    const char* limit = getenv("MUPTI_STANDIN_BLOCK_S");
    sleep(limit ? (unsigned)atoi(limit) : 30u);
  }
  deliver();
  return MUPTI_SUCCESS;
}
EXPORT int muptiGetTimestamp(uint64_t* t) { *t = vendor_now(); return MUPTI_SUCCESS; }
EXPORT int muptiFinalize(void) { ++g_finalize_calls; return MUPTI_SUCCESS; }
EXPORT int muptiActivityEnableLaunchAttributes(uint8_t enable) { g_launch_attributes = enable; return MUPTI_SUCCESS; }

/* ---- libmusa ---- */
static const int kExportTable[4];
EXPORT int muGetExportTable(const void** table, const void* id) { *table = kExportTable; return 0; }
EXPORT int muInit(unsigned flags) { return 0; }
EXPORT int muDeviceGetCount(int* n) { *n = 1; return 0; }
EXPORT int muDeviceGet(int* dev, int ordinal) { *dev = ordinal; return ordinal == 0 ? 0 : 101; }
EXPORT int muDeviceGetName(char* name, int len, int dev) { snprintf(name, len, "MTT S4000 (stand-in)"); return 0; }
EXPORT int muDeviceGetAttribute(int* value, int attribute, int dev) {
  if (attribute < 0 || attribute >= 128 || dev != 0) return 1;
  *value = g_device_attr[attribute];
  return 0;
}
EXPORT int muCtxGetDevice(int* dev) { *dev = 0; return 0; }
EXPORT int muCtxGetCurrent(void** ctx) { *ctx = CONTEXT; return 0; }
EXPORT int muCtxPushCurrent(void* ctx) { return ctx == CONTEXT ? 0 : 201; }
EXPORT int muCtxPopCurrent(void** ctx) { *ctx = CONTEXT; return 0; }
EXPORT int muCtxSynchronize(void) {
  pthread_mutex_lock(&g_lock);
  ++g_syncs;
  pthread_mutex_unlock(&g_lock);
  return 0;
}
EXPORT int muFuncGetAttribute(int* value, int attribute, void* f) {
  const function* fn = (const function*)f;
  switch (attribute) {
    case 0: *value = 1024; return 0;
    case 1: *value = fn->static_smem; return 0;
    case 3: *value = fn->local; return 0;
    case 4: *value = fn->regs; return 0;
    default: return 1;
  }
}
EXPORT int muOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, void* f, int block_size, size_t dynamic_smem) {
  /* The stand-in's occupancy rule: the function's own limit, halved when the launch asks for
   * more than 32 KiB of dynamic shared memory. */
  const function* fn = (const function*)f;
  *blocks = dynamic_smem > 32768 ? fn->max_blocks / 2 : fn->max_blocks;
  return 0;
}

/* ---- test-only control ---- */
EXPORT void standin_define_function(const char* name, int regs, int static_smem, int local, int max_blocks) {
  function* fn = &g_functions[g_num_functions++ % MAX_FUNCTIONS];
  snprintf(fn->name, sizeof fn->name, "%s", name);
  fn->regs = regs, fn->static_smem = static_smem, fn->local = local, fn->max_blocks = max_blocks;
}
static function* function_named(const char* name) {
  for (int i = 0; i < g_num_functions && i < MAX_FUNCTIONS; ++i)
    if (strcmp(g_functions[i].name, name) == 0) return &g_functions[i];
  return NULL;
}
EXPORT void standin_set_device_attribute(int attribute, int value) { g_device_attr[attribute] = value; }

/* A driver launch of `name` (muLaunchKernel, or `api` when not NULL) on `stream`, running
 * `duration_ns`; returns the correlation id. Inside a runtime launch (standin_runtime_launch)
 * the correlation id is the runtime call's, as MUPTI does. */
static uint32_t launch_as(const char* api_name_, const char* name, const int grid[3], const int block[3],
                          unsigned dyn_smem, uint32_t stream, uint64_t duration, uint32_t corr) {
  const api_name* api = find_api(api_name_);
  function* fn = function_named(name);
  launch_params p;
  memset(&p, 0, sizeof p);
  p.f = fn;
  p.gridDimX = grid[0], p.gridDimY = grid[1], p.gridDimZ = grid[2];
  p.blockDimX = block[0], p.blockDimY = block[1], p.blockDimZ = block[2];
  p.sharedMemBytes = dyn_smem;
  if (!corr) corr = next_correlation();
  callback(api, SITE_ENTER, corr, &p);
  kernel6 k;
  memset(&k, 0, sizeof k);
  k.kind = KIND_CONCURRENT_KERNEL;
  stamp(&k.start, &k.end, duration);
  k.deviceId = 0, k.contextId = 1, k.streamId = stream, k.correlationId = corr;
  k.name = fn ? fn->name : "unknown_kernel";
  if (g_launch_attributes) {
    k.gridX = grid[0], k.gridY = grid[1], k.gridZ = grid[2];
    k.blockX = block[0], k.blockY = block[1], k.blockZ = block[2];
    k.dynamicSharedMemory = (int32_t)dyn_smem;
    if (fn) k.registersPerThread = (uint16_t)fn->regs, k.staticSharedMemory = fn->static_smem,
            k.localMemoryPerThread = (uint32_t)fn->local;
  }
  write_record(&k, sizeof k, KIND_CONCURRENT_KERNEL);
  callback(api, SITE_EXIT, corr, &p);
  return corr;
}

EXPORT uint32_t standin_launch(const char* name, const int grid[3], const int block[3], unsigned dyn_smem,
                               uint32_t stream, uint64_t duration) {
  return launch_as("muLaunchKernel", name, grid, block, dyn_smem, stream, duration, 0);
}

/* musaLaunchKernel, which reaches muLaunchKernel inside it: both callbacks fire, nested. */
EXPORT uint32_t standin_runtime_launch(const char* name, const int grid[3], const int block[3], uint32_t stream,
                                       uint64_t duration) {
  const api_name* api = find_api("musaLaunchKernel");
  uint32_t corr = next_correlation();
  callback(api, SITE_ENTER, corr, NULL);
  launch_as("muLaunchKernel", name, grid, block, 0, stream, duration, corr);
  callback(api, SITE_EXIT, corr, NULL);
  return corr;
}

EXPORT uint32_t standin_memcpy(uint8_t copy_kind, uint64_t bytes, uint32_t stream, uint64_t duration) {
  const api_name* api = find_api("muMemcpyHtoDAsync");
  uint32_t corr = next_correlation();
  callback(api, SITE_ENTER, corr, NULL);
  memcpy4 m;
  memset(&m, 0, sizeof m);
  m.kind = KIND_MEMCPY, m.copyKind = copy_kind, m.bytes = bytes;
  stamp(&m.start, &m.end, duration);
  m.streamId = stream, m.correlationId = corr;
  write_record(&m, sizeof m, KIND_MEMCPY);
  callback(api, SITE_EXIT, corr, NULL);
  return corr;
}

EXPORT uint32_t standin_memset(uint64_t bytes, uint32_t stream, uint64_t duration) {
  const api_name* api = find_api("muMemsetD32Async");
  uint32_t corr = next_correlation();
  callback(api, SITE_ENTER, corr, NULL);
  memset3 m;
  memset(&m, 0, sizeof m);
  m.kind = KIND_MEMSET, m.bytes = bytes;
  stamp(&m.start, &m.end, duration);
  m.streamId = stream, m.correlationId = corr;
  write_record(&m, sizeof m, KIND_MEMSET);
  callback(api, SITE_EXIT, corr, NULL);
  return corr;
}

/* muGraphLaunch of a graph of `nodes` kernels named `name`: one call, one correlation id, one
 * record per node (told apart by graphNodeId). */
EXPORT uint32_t standin_graph_launch(const char* name, int nodes, uint32_t stream, uint64_t duration) {
  const api_name* api = find_api("muGraphLaunch");
  uint32_t corr = next_correlation();
  callback(api, SITE_ENTER, corr, NULL);
  for (int i = 0; i < nodes; ++i) {
    kernel6 k;
    memset(&k, 0, sizeof k);
    k.kind = KIND_CONCURRENT_KERNEL;
    stamp(&k.start, &k.end, duration);
    k.streamId = stream, k.correlationId = corr, k.graphNodeId = 100 + (uint64_t)i, k.graphId = 1;
    k.name = function_named(name) ? function_named(name)->name : "unknown_kernel";
    write_record(&k, sizeof k, KIND_CONCURRENT_KERNEL);
  }
  callback(api, SITE_EXIT, corr, NULL);
  return corr;
}

EXPORT void standin_refuse_kind(int kind) { g_refused_kind = kind; }
EXPORT void standin_null_context(int on) { g_null_context = on; }
EXPORT void standin_corrupt_at_teardown(int on) { g_corrupt_at_teardown = on, g_spoilt = NULL; }
EXPORT void standin_truncate_next_delivery(size_t bytes) { g_truncate_next = bytes; }
/* A record of a kind the profiler does not know (16 bytes), written as though enabled. */
EXPORT void standin_unknown_record(uint32_t kind) {
  uint8_t record[16] = {0};
  memcpy(record, &kind, sizeof kind);
  taken_buffer full = {NULL, 0, 0};
  pthread_mutex_lock(&g_lock);
  if (g_request) activity_buffer_append(&g_buffer, g_request, record, sizeof record, 8, sizeof(kernel6), &full);
  complete_fn complete = g_complete;
  pthread_mutex_unlock(&g_lock);
  hand_back(full, complete);
}
EXPORT void standin_clock_rate_ppm(int64_t ppm) { g_rate_since = host_now(), g_rate_ppm = ppm; }
EXPORT void standin_zero_next(int n) { pthread_mutex_lock(&g_lock); g_zero_next = n; pthread_mutex_unlock(&g_lock); }
EXPORT void standin_drop_next(int n) { pthread_mutex_lock(&g_lock); g_drop_next = n; pthread_mutex_unlock(&g_lock); }
EXPORT void standin_hold_subscriber(int held) { g_held_by_other = held; }
EXPORT void standin_no_export_table(int missing) { g_no_export_table = missing; }
/* 0 subscribed, 1 pending records, 2 non-forced flushes, 3 finalize calls, 4 launch attributes,
 * 5 context syncs, 6 buffers delivered, 7 kernel kind enabled, 8 forced flushes that blocked,
 * 9 buffers handed back corrupted at teardown, 10 reads of such a buffer */
EXPORT uint64_t standin_state(int what) {
  switch (what) {
    case 0: return (uint64_t)g_subscribed;
    case 1: return g_buffer.pending;
    case 2: return g_unforced_flushes;
    case 3: return g_finalize_calls;
    case 4: return (uint64_t)g_launch_attributes;
    case 5: return g_syncs;
    case 6: return g_buffer.delivered;
    case 7: return (uint64_t)g_kinds[KIND_CONCURRENT_KERNEL];
    case 8: return g_blocked_flushes;
    case 9: return g_corrupted;
    case 10: return g_spoilt_reads;
    default: return 0;
  }
}
