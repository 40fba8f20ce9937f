/* A stand-in for libroctracer64.so, built by the tests (tests/standins/build.py).
 *
 * It exports the roctracer functions the roctracer backend resolves, with the documented
 * signatures (roctracer.h / roctracer_ext.h, interface 4.1) and the documented record layout
 * (activity_record_t of ext/prof_protocol.h), and plays the part of the HIP runtime through
 * test-only control functions (standin_*): a "HIP call" invokes the registered HIP_API
 * callback on enter and exit with a fresh correlation id, and queues HIP_OPS records in the
 * default pool's buffer, which reaches the pool's buffer callback when it fills up, on
 * roctracer_flush_activity, or when the pool closes. Record times are on a clock of its own
 * (host monotonic + 1000 s), as a vendor clock would be.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- the documented interface ---- */
typedef int roctracer_status_t;
#define ROCTRACER_STATUS_SUCCESS 0
#define ROCTRACER_STATUS_ERROR (-1)
#define ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID (-2)
#define ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT (-3)
#define ROCTRACER_STATUS_ERROR_DEFAULT_POOL_UNDEFINED (-4)
#define ROCTRACER_STATUS_ERROR_DEFAULT_POOL_ALREADY_DEFINED (-5)

enum { DOMAIN_HIP_OPS = 2, DOMAIN_HIP_API = 3 };
enum { PHASE_ENTER = 0, PHASE_EXIT = 1 };
enum { HIP_OP_ID_DISPATCH = 0, HIP_OP_ID_COPY = 1, HIP_OP_ID_BARRIER = 2 };

typedef void (*activity_rtapi_callback_t)(uint32_t domain, uint32_t cid, const void* data, void* arg);
typedef void (*roctracer_buffer_callback_t)(const char* begin, const char* end, void* arg);
typedef void (*roctracer_allocator_t)(char** ptr, size_t size, void* arg);

typedef struct activity_record_s {
  uint32_t domain;
  uint32_t kind;
  uint32_t op;
  union {
    struct {
      uint64_t correlation_id;
      uint64_t begin_ns;
      uint64_t end_ns;
    };
    struct {
      uint32_t se;
      uint64_t cycle;
      uint64_t pc;
    } pc_sample;
  };
  union {
    struct {
      int device_id;
      uint64_t queue_id;
    };
    struct {
      uint32_t process_id;
      uint32_t thread_id;
    };
  };
  union {
    size_t bytes;
    const char* kernel_name;
  };
} activity_record_t;

typedef struct {
  uint32_t mode;
  size_t buffer_size;
  roctracer_allocator_t alloc_fun;
  void* alloc_arg;
  roctracer_buffer_callback_t buffer_callback_fun;
  void* buffer_callback_arg;
} roctracer_properties_t;

/* The leading fields of hip_api_data_t; the per-API argument union follows. */
typedef struct {
  uint64_t correlation_id;
  uint32_t phase;
  char args[64];
  uint64_t* phase_data;
} hip_api_data_t;

/* ---- the stand-in's HIP: API ids (deliberately not those of any ROCm release) ---- */
static const char* const kApiNames[] = {
    "hipMalloc", "hipFree", "hipStreamSynchronize", "hipLaunchKernel", "hipModuleLaunchKernel",
    "hipExtLaunchKernel", "hipExtModuleLaunchKernel", "hipModuleLaunchCooperativeKernel",
    "hipGraphLaunch", "hipLaunchHostFunc", "hipMemcpy", "hipMemcpyAsync", "hipMemcpyHtoDAsync",
    "hipMemsetAsync", "hipMemsetD32Async", "hipGetDevice", "hipDeviceSynchronize"};
#define API_BASE 40 /* ids start here: id 0..39 and past the table are "unknown" */
#define API_COUNT ((int)(sizeof(kApiNames) / sizeof(kApiNames[0])))
/* Copy kinds as the stand-in numbers them, named by roctracer_op_string(HIP_OPS, COPY, kind). */
static const char* const kCopyNames[] = {"CopyHostToDevice", "CopyDeviceToHost", "CopyDeviceToDevice",
                                         "FillBuffer"};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static activity_rtapi_callback_t g_domain_cb; /* HIP_API domain-wide callback */
static void* g_domain_arg;
static activity_rtapi_callback_t g_op_cb[API_BASE + API_COUNT];
static void* g_op_arg[API_BASE + API_COUNT];
static int g_pool_open, g_activity_on, g_started;
static roctracer_properties_t g_props;
static activity_record_t* g_buf; /* the pool's current buffer */
static size_t g_buf_count, g_buf_capacity;
static uint64_t g_next_corr = 1000;
static int g_drop_next;
static int g_refuse_op_callbacks;
static char g_fail_call[64];
static int g_fail_status;
static uint64_t g_delivered, g_buffers;
static __thread char g_error[256];

#define VENDOR_CLOCK_OFFSET 1000000000000ull /* 1000 s */

static uint64_t vendor_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + VENDOR_CLOCK_OFFSET;
}

/* A scripted failure: the named call returns the scripted status once. */
static int scripted_failure(const char* call, roctracer_status_t* status) {
  int hit;
  pthread_mutex_lock(&g_lock);
  hit = g_fail_call[0] && strcmp(g_fail_call, call) == 0;
  if (hit) {
    g_fail_call[0] = 0;
    *status = g_fail_status;
    snprintf(g_error, sizeof g_error, "stand-in: %s was told to fail", call);
  }
  pthread_mutex_unlock(&g_lock);
  return hit;
}

static int api_id(const char* name) {
  for (int i = 0; i < API_COUNT; ++i)
    if (strcmp(kApiNames[i], name) == 0) return API_BASE + i;
  return -1;
}

/* The current buffer, taken out under the lock (g_lock held) so that no other thread appends to
   it while it is handed over outside the lock. */
typedef struct {
  activity_record_t* buf;
  size_t count;
  roctracer_buffer_callback_t cb;
  void* arg;
} held_buffer;

static held_buffer take_buffer_locked(void) {
  held_buffer h = {g_buf, g_buf_count, g_props.buffer_callback_fun, g_props.buffer_callback_arg};
  g_buf = NULL;
  g_buf_count = 0;
  if (h.count) {
    g_delivered += h.count;
    g_buffers += 1;
  }
  return h;
}

/* Hands a taken buffer to the pool's callback, without the lock. The buffer (and the kernel names
 * it points to) stays valid during the callback only, as documented. */
static void hand_over(held_buffer h) {
  if (h.count && h.cb) h.cb((const char*)h.buf, (const char*)(h.buf + h.count), h.arg);
  for (size_t i = 0; i < h.count; ++i)
    if (h.buf[i].op == HIP_OP_ID_DISPATCH) free((void*)h.buf[i].kernel_name);
  free(h.buf);
}

static void deliver(void) {
  pthread_mutex_lock(&g_lock);
  held_buffer h = take_buffer_locked();
  pthread_mutex_unlock(&g_lock);
  hand_over(h);
}

/* Queues one HIP_OPS record; a buffer full after it is taken out under the lock and handed over
 * after (another thread could otherwise append past its end meanwhile). */
static void queue_record(const activity_record_t* r) {
  held_buffer full = {NULL, 0, NULL, NULL};
  pthread_mutex_lock(&g_lock);
  if (!g_pool_open || !g_activity_on) {
    if (r->op == HIP_OP_ID_DISPATCH) free((void*)r->kernel_name);
    pthread_mutex_unlock(&g_lock);
    return;
  }
  if (g_drop_next > 0) {
    --g_drop_next;
    if (r->op == HIP_OP_ID_DISPATCH) free((void*)r->kernel_name);
    pthread_mutex_unlock(&g_lock);
    return;
  }
  if (!g_buf) g_buf = malloc(g_buf_capacity * sizeof(activity_record_t));
  g_buf[g_buf_count++] = *r;
  if (g_buf_count >= g_buf_capacity) full = take_buffer_locked();
  pthread_mutex_unlock(&g_lock);
  if (full.buf) hand_over(full);
}

/* ---- roctracer functions ---- */
EXPORT uint32_t roctracer_version_major(void) { return 4; }
EXPORT uint32_t roctracer_version_minor(void) { return 1; }
EXPORT const char* roctracer_error_string(void) { return g_error; }

EXPORT const char* roctracer_op_string(uint32_t domain, uint32_t op, uint32_t kind) {
  if (domain == DOMAIN_HIP_API) {
    if (op >= API_BASE && op < API_BASE + API_COUNT) return kApiNames[op - API_BASE];
    return op < 1000 ? "unknown" : NULL; /* like hip_api_name, then like an out-of-range id */
  }
  if (domain == DOMAIN_HIP_OPS) {
    if (op == HIP_OP_ID_DISPATCH) return "KernelExecution";
    if (op == HIP_OP_ID_COPY) return kind < 4 ? kCopyNames[kind] : "CopyUnknown";
    if (op == HIP_OP_ID_BARRIER) return "Marker";
  }
  return NULL;
}

EXPORT roctracer_status_t roctracer_op_code(uint32_t domain, const char* str, uint32_t* op, uint32_t* kind) {
  int id = domain == DOMAIN_HIP_API && str ? api_id(str) : -1;
  if (id < 0) return ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT;
  *op = (uint32_t)id;
  if (kind) *kind = 0;
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_enable_op_callback(uint32_t domain, uint32_t op,
                                                       activity_rtapi_callback_t cb, void* arg) {
  roctracer_status_t st;
  if (scripted_failure("roctracer_enable_op_callback", &st)) return st;
  if (domain != DOMAIN_HIP_API) return ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID;
  if (op >= API_BASE + API_COUNT || op < API_BASE) return ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT;
  if (g_refuse_op_callbacks) {
    snprintf(g_error, sizeof g_error, "stand-in: per-op callbacks refused");
    return ROCTRACER_STATUS_ERROR;
  }
  pthread_mutex_lock(&g_lock);
  g_op_cb[op] = cb;
  g_op_arg[op] = arg;
  pthread_mutex_unlock(&g_lock);
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_enable_domain_callback(uint32_t domain, activity_rtapi_callback_t cb,
                                                           void* arg) {
  roctracer_status_t st;
  if (scripted_failure("roctracer_enable_domain_callback", &st)) return st;
  if (domain != DOMAIN_HIP_API) return ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID;
  pthread_mutex_lock(&g_lock);
  g_domain_cb = cb;
  g_domain_arg = arg;
  pthread_mutex_unlock(&g_lock);
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_disable_op_callback(uint32_t domain, uint32_t op) {
  if (domain != DOMAIN_HIP_API) return ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID;
  if (op >= API_BASE + API_COUNT) return ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&g_lock);
  g_op_cb[op] = NULL;
  pthread_mutex_unlock(&g_lock);
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_disable_domain_callback(uint32_t domain) {
  if (domain != DOMAIN_HIP_API) return ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID;
  pthread_mutex_lock(&g_lock);
  g_domain_cb = NULL;
  pthread_mutex_unlock(&g_lock);
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_next_record(const activity_record_t* record, const activity_record_t** next) {
  *next = record + 1;
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_open_pool(const roctracer_properties_t* props) {
  roctracer_status_t st;
  if (scripted_failure("roctracer_open_pool", &st)) return st;
  pthread_mutex_lock(&g_lock);
  if (g_pool_open) {
    pthread_mutex_unlock(&g_lock);
    snprintf(g_error, sizeof g_error, "default pool already defined");
    return ROCTRACER_STATUS_ERROR_DEFAULT_POOL_ALREADY_DEFINED;
  }
  g_props = *props;
  g_buf_capacity = props->buffer_size / sizeof(activity_record_t);
  if (g_buf_capacity < 1) g_buf_capacity = 1;
  g_pool_open = 1;
  pthread_mutex_unlock(&g_lock);
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_flush_activity(void) {
  roctracer_status_t st;
  if (scripted_failure("roctracer_flush_activity", &st)) return st;
  deliver();
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_close_pool(void) {
  deliver(); /* closing flushes */
  pthread_mutex_lock(&g_lock);
  g_pool_open = 0;
  g_activity_on = 0;
  memset(&g_props, 0, sizeof g_props);
  pthread_mutex_unlock(&g_lock);
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_enable_domain_activity(uint32_t domain) {
  roctracer_status_t st;
  if (scripted_failure("roctracer_enable_domain_activity", &st)) return st;
  if (domain != DOMAIN_HIP_OPS) return ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID;
  pthread_mutex_lock(&g_lock);
  int open = g_pool_open;
  if (open) g_activity_on = 1;
  pthread_mutex_unlock(&g_lock);
  return open ? ROCTRACER_STATUS_SUCCESS : ROCTRACER_STATUS_ERROR_DEFAULT_POOL_UNDEFINED;
}

EXPORT roctracer_status_t roctracer_disable_domain_activity(uint32_t domain) {
  if (domain != DOMAIN_HIP_OPS) return ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID;
  pthread_mutex_lock(&g_lock);
  g_activity_on = 0;
  pthread_mutex_unlock(&g_lock);
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_get_timestamp(uint64_t* timestamp) {
  *timestamp = vendor_now();
  return ROCTRACER_STATUS_SUCCESS;
}

EXPORT void roctracer_start(void) { g_started = 1; }
EXPORT void roctracer_stop(void) { g_started = 0; }

/* ---- test-only control functions ---- */

/* One HIP call `api` that runs `nrecords` operations of `op` (HIP_OP_ID_DISPATCH: a kernel
 * named `kernel`; HIP_OP_ID_COPY: `bytes` bytes of copy kind `kind`) of `duration_ns` each,
 * back to back, on `device`/`queue`. The HIP_API callback (per-op or domain) sees enter and
 * exit; the records carry the call's correlation id. Returns that id. */
EXPORT uint64_t standin_call(const char* api, uint32_t op, uint32_t kind, const char* kernel, uint64_t bytes,
                             int device, uint64_t queue, uint64_t duration_ns, int nrecords) {
  int cid = api_id(api);
  activity_rtapi_callback_t cb = NULL;
  void* arg = NULL;
  hip_api_data_t data;
  uint64_t begin;
  memset(&data, 0, sizeof data);
  pthread_mutex_lock(&g_lock);
  data.correlation_id = g_next_corr++;
  if (cid >= 0) {
    cb = g_op_cb[cid] ? g_op_cb[cid] : g_domain_cb;
    arg = g_op_cb[cid] ? g_op_arg[cid] : g_domain_arg;
  }
  pthread_mutex_unlock(&g_lock);
  if (cb) cb(DOMAIN_HIP_API, (uint32_t)cid, &data, arg);
  begin = vendor_now() + 1000; /* the device starts the work 1 us after the call */
  for (int i = 0; i < nrecords; ++i) {
    activity_record_t r;
    memset(&r, 0, sizeof r);
    r.domain = DOMAIN_HIP_OPS;
    r.op = op;
    r.kind = kind;
    r.correlation_id = data.correlation_id;
    r.begin_ns = begin;
    r.end_ns = begin + duration_ns;
    r.device_id = device;
    r.queue_id = queue;
    if (op == HIP_OP_ID_DISPATCH)
      r.kernel_name = kernel ? strdup(kernel) : NULL;
    else
      r.bytes = bytes;
    begin = r.end_ns;
    queue_record(&r);
  }
  data.phase = PHASE_EXIT;
  if (cb) cb(DOMAIN_HIP_API, (uint32_t)cid, &data, arg);
  return data.correlation_id;
}

/* hipLaunchKernel of one kernel. */
EXPORT uint64_t standin_launch(const char* kernel, uint64_t queue, uint64_t duration_ns) {
  return standin_call("hipLaunchKernel", HIP_OP_ID_DISPATCH, 0, kernel, 0, 0, queue, duration_ns, 1);
}

/* A record whose HIP call no callback saw (e.g. work launched before tracing started). */
EXPORT uint64_t standin_record_unseen(const char* kernel, uint64_t queue, uint64_t duration_ns) {
  return standin_call("hipNoSuchCall", HIP_OP_ID_DISPATCH, 0, kernel, 0, 0, queue, duration_ns, 1);
}

EXPORT void standin_drop_next(int n) {
  pthread_mutex_lock(&g_lock);
  g_drop_next = n;
  pthread_mutex_unlock(&g_lock);
}

/* Makes `call` (a roctracer_* name) return `status` once. */
EXPORT void standin_fail_next(const char* call, int status) {
  pthread_mutex_lock(&g_lock);
  snprintf(g_fail_call, sizeof g_fail_call, "%s", call);
  g_fail_status = status;
  pthread_mutex_unlock(&g_lock);
}

EXPORT void standin_refuse_op_callbacks(int refuse) { g_refuse_op_callbacks = refuse; }

/* Records queued in the pool and not yet delivered. */
EXPORT uint64_t standin_pending(void) {
  pthread_mutex_lock(&g_lock);
  uint64_t n = g_buf_count;
  pthread_mutex_unlock(&g_lock);
  return n;
}

EXPORT uint64_t standin_delivered(void) { return g_delivered; }
EXPORT uint64_t standin_buffers(void) { return g_buffers; }

/* Bit 0: pool open, 1: HIP_OPS activity on, 2: any HIP_API callback set, 3: started. */
EXPORT int standin_state(void) {
  int any = g_domain_cb != NULL;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < API_BASE + API_COUNT; ++i) any |= g_op_cb[i] != NULL;
  int state = g_pool_open | g_activity_on << 1 | any << 2 | g_started << 3;
  pthread_mutex_unlock(&g_lock);
  return state;
}

/* Per-op HIP_API callbacks currently set. */
EXPORT int standin_op_callbacks(void) {
  int n = 0;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < API_BASE + API_COUNT; ++i) n += g_op_cb[i] != NULL;
  pthread_mutex_unlock(&g_lock);
  return n;
}

EXPORT uint64_t standin_clock_offset(void) { return VENDOR_CLOCK_OFFSET; }
