/* Stand-in for the part of libcupti the activity tracer calls (subscribe, callbacks, activity
 * buffers, flush, dropped counts, finalize), built against the real CUPTI headers so that its
 * records have the documented layout (CUpti_ActivityKernel9), with the documented semantics the
 * tests need:
 *   - one subscriber per process: a second cuptiSubscribe fails with
 *     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, as it does while "another tool" holds the
 *     slot (standin_hold_slot);
 *   - a launch (standin_launch) calls the subscriber on enter and exit when its callback id is
 *     enabled, and writes a kernel record when the kernel kind is enabled, whether or not anyone
 *     is subscribed to callbacks;
 *   - records wait in a buffer from the buffer-request callback until a forced flush hands it back;
 *   - a disabled kind makes no new records, and disabling it keeps those already buffered: the
 *     next flush delivers them (callbacks, too, go on and off without touching the buffer);
 *   - a kernel may still run after its launch returns (standin_launch_running): its record
 *     is written when it ends (standin_finish_running);
 *   - cuptiFinalize detaches everything (subscription, callbacks, activity kinds, buffers' owner,
 *     dropped counts), as CUPTI's does; a later subscribe starts afresh, and correlation ids start
 *     over (CUPTI does not promise to continue them: the defensive reading);
 *   - any CUPTI call initializes the library when it is not (after cuptiFinalize, or at first
 *     use), which is when a real one starts costing launches again: counted ("init");
 *   - timestamps are CLOCK_REALTIME ns, as cuptiGetTimestamp's and the records' are on Linux;
 *   - records may run on a clock off cuptiGetTimestamp's (standin_record_clock_offset), as CUPTI's
 *     did on the H200 in some processes: kernel records 16-31 ms before their launch calls;
 *   - records may be stamped on no CUPTI clock at all (standin_record_clock): 0 ("timestamps
 *     could not be collected"), or CLOCK_MONOTONIC, as the kernel-replay records of the counters
 *     route were on the H200 (starts read decades before their launch calls).
 *   - calls from several threads are safe, as CUPTI's are: each call holds one lock (recursive:
 *     the buffer-completed callback reads its records through cuptiActivityGetNextRecord), and
 *     the subscriber's launch callbacks run outside it, on the launching thread; a launch on one
 *     thread may meet a flush or cuptiFinalize on another (the profiler's idle clock).
 * Test-only counters (standin_*) tell how often each call was made. */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define LAUNCH_CBID CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel
#define RECORD_STRIDE ((sizeof(CUpti_ActivityKernel9) + 7) & ~(size_t)7)
#define FIRST_CORRELATION 100
#define INIT() (g_initialized ? (void)0 : (void)(g_initialized = 1, ++g_inits))
/* Holds the library's one lock for the rest of the enclosing function. */
#define LOCKED() \
  pthread_mutex_lock(&g_lock); \
  __attribute__((cleanup(unlock))) int locked_ = 1; \
  (void)locked_

static pthread_mutex_t g_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static void unlock(int* unused) {
  (void)unused;
  pthread_mutex_unlock(&g_lock);
}

static CUpti_CallbackFunc g_cb;
static void* g_cb_arg;
static int g_subscribed, g_held_by_other, g_launch_enabled, g_kernel_kind;
static CUpti_BuffersCallbackRequestFunc g_request;
static CUpti_BuffersCallbackCompleteFunc g_complete;
static uint8_t* g_buf;
static size_t g_buf_size, g_buf_used;
static uint32_t g_next_corr = FIRST_CORRELATION;
static int g_initialized, g_inits;
static size_t g_dropped;
static int g_subscribes, g_unsubscribes, g_finalizes, g_kind_enables, g_kind_disables, g_callback_toggles, g_callbacks;
static char g_context;
static int64_t g_record_offset;
static const char* const kKernelName = "standin_kernel";

static int g_record_clock; /* 0: CUPTI's (realtime), 1: zero stamps, 2: CLOCK_MONOTONIC */

static uint64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void) { return clock_ns(CLOCK_REALTIME); }

static uint64_t record_start_ns(void) {
  if (g_record_clock == 1) return 0;
  if (g_record_clock == 2) return clock_ns(CLOCK_MONOTONIC) + 1000;
  return (uint64_t)((int64_t)now_ns() + 1000 + g_record_offset);
}

static void deliver(void) {
  uint8_t* buf = g_buf;
  size_t size = g_buf_size, used = g_buf_used;
  g_buf = NULL;
  g_buf_used = 0;
  if (buf && g_complete) g_complete((CUcontext)&g_context, 0, buf, size, used);
}

static void write_kernel(uint32_t corr) {
  LOCKED();
  if (!g_kernel_kind || !g_request) return;
  if (!g_buf) {
    size_t max_records = 0;
    g_request(&g_buf, &g_buf_size, &max_records);
    g_buf_used = 0;
    if (!g_buf || g_buf_size < RECORD_STRIDE) {
      g_buf = NULL;
      ++g_dropped;
      return;
    }
  }
  CUpti_ActivityKernel9 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = record_start_ns();
  k.end = g_record_clock == 1 ? 0 : k.start + 5000;
  k.correlationId = corr;
  k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
  k.name = kKernelName;
  memcpy(g_buf + g_buf_used, &k, sizeof k);
  g_buf_used += RECORD_STRIDE;
  if (g_buf_used + RECORD_STRIDE > g_buf_size) deliver();
}

static void call_back(CUpti_ApiCallbackSite site, uint32_t corr) {
  CUpti_CallbackFunc cb;
  void* arg;
  {
    LOCKED();
    if (!g_subscribed || !g_launch_enabled || !g_cb) return;
    cb = g_cb, arg = g_cb_arg;
    ++g_callbacks;
  }
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionName = "cuLaunchKernel";
  d.context = (CUcontext)&g_context;
  d.correlationId = corr;
  cb(arg, CUPTI_CB_DOMAIN_DRIVER_API, LAUNCH_CBID, &d);
}

EXPORT CUptiResult cuptiGetVersion(uint32_t* v) {
  LOCKED();
  INIT();
  *v = 130000;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char** s) {
  LOCKED();
  INIT();
  *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                           : "CUPTI_ERROR_UNKNOWN";
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc cb, void* arg) {
  LOCKED();
  INIT();
  if (g_subscribed || g_held_by_other) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  ++g_subscribes;
  g_subscribed = 1;
  g_cb = cb;
  g_cb_arg = arg;
  *handle = (CUpti_SubscriberHandle)&g_subscribed;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle handle) {
  LOCKED();
  INIT();
  (void)handle;
  ++g_unsubscribes;
  g_subscribed = 0;
  g_cb = NULL;
  g_launch_enabled = 0;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle h, CUpti_CallbackDomain domain,
                                       CUpti_CallbackId cbid) {
  LOCKED();
  INIT();
  (void)h;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == LAUNCH_CBID) {
    g_launch_enabled = enable != 0;
    ++g_callback_toggles;
  }
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  LOCKED();
  INIT();
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid != LAUNCH_CBID) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = "cuLaunchKernel";
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                  CUpti_BuffersCallbackCompleteFunc complete) {
  LOCKED();
  INIT();
  g_request = request;
  g_complete = complete;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  LOCKED();
  INIT();
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) g_kernel_kind = 1;
  ++g_kind_enables;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  LOCKED();
  INIT();
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) g_kernel_kind = 0;
  ++g_kind_disables;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  LOCKED();
  INIT();
  uint8_t* next = *record ? (uint8_t*)*record + RECORD_STRIDE : buffer;
  if (next + RECORD_STRIDE > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (CUpti_Activity*)next;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t* dropped) {
  LOCKED();
  INIT();
  (void)c, (void)s;
  *dropped = g_dropped;
  g_dropped = 0;
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  LOCKED();
  INIT();
  if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) deliver();
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiGetTimestamp(uint64_t* t) {
  LOCKED();
  INIT();
  *t = now_ns();
  return CUPTI_SUCCESS;
}
EXPORT CUptiResult cuptiFinalize(void) {
  LOCKED();
  ++g_finalizes;
  deliver();
  g_subscribed = 0, g_cb = NULL, g_launch_enabled = 0, g_kernel_kind = 0;
  g_request = NULL, g_complete = NULL;
  g_dropped = 0, g_next_corr = FIRST_CORRELATION, g_initialized = 0;
  return CUPTI_SUCCESS;
}

/* ---- test-only control ---- */
/* One cuLaunchKernel of a 5 us kernel; returns its correlation id. */
static uint32_t next_correlation(void) {
  LOCKED();
  return g_next_corr++;
}

EXPORT uint32_t standin_launch(void) {
  uint32_t corr = next_correlation();
  call_back(CUPTI_API_ENTER, corr);
  write_kernel(corr);
  call_back(CUPTI_API_EXIT, corr);
  return corr;
}
/* A launch call that is entered on this thread and has not returned yet (its exit comes with
   standin_launch_exit): how another thread's launch looks while the callbacks are switched. */
static uint32_t g_entered;
EXPORT uint32_t standin_launch_enter(void) {
  g_entered = next_correlation();
  call_back(CUPTI_API_ENTER, g_entered);
  write_kernel(g_entered);
  return g_entered;
}
EXPORT void standin_launch_exit(void) { call_back(CUPTI_API_EXIT, g_entered); }
/* A launch whose kernel is still running: callbacks now, its record at standin_finish_running. */
static uint32_t g_running[64];
static int g_num_running;
EXPORT uint32_t standin_launch_running(void) {
  uint32_t corr = next_correlation();
  call_back(CUPTI_API_ENTER, corr);
  call_back(CUPTI_API_EXIT, corr);
  if (g_num_running < 64) g_running[g_num_running++] = corr;
  return corr;
}
EXPORT void standin_finish_running(void) {
  LOCKED();
  for (int i = 0; i < g_num_running; ++i) write_kernel(g_running[i]);
  g_num_running = 0;
}
/* The next `n` records are lost for lack of buffer space (counted as dropped). */
EXPORT void standin_drop(int n) { g_dropped += (size_t)n; }
EXPORT void standin_hold_slot(int held) { g_held_by_other = held; }
/* Records from now on are stamped `ns` off the clock cuptiGetTimestamp reads. */
EXPORT void standin_record_clock_offset(long long ns) { g_record_offset = ns; }
/* Records from now on are stamped on CUPTI's clock (0), not at all (1) or on CLOCK_MONOTONIC (2). */
EXPORT void standin_record_clock(int which) { g_record_clock = which; }
EXPORT int standin_subscribed(void) { return g_subscribed; }
EXPORT int standin_kernel_kind_enabled(void) { return g_kernel_kind; }
EXPORT int standin_launch_callback_enabled(void) { return g_launch_enabled; }
EXPORT int standin_count(const char* what) {
  if (!strcmp(what, "subscribe")) return g_subscribes;
  if (!strcmp(what, "unsubscribe")) return g_unsubscribes;
  if (!strcmp(what, "finalize")) return g_finalizes;
  if (!strcmp(what, "kind_enable")) return g_kind_enables;
  if (!strcmp(what, "kind_disable")) return g_kind_disables;
  if (!strcmp(what, "callback_toggle")) return g_callback_toggles;
  if (!strcmp(what, "callback")) return g_callbacks;
  if (!strcmp(what, "init")) return g_inits;
  return -1;
}
