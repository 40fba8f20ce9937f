/* A stand-in for libmspti.so (Huawei Ascend), with the two aclrt calls the cann backend makes,
 * built by the tests (tests/standins/build.py). Like MSPTI it exports no mstx* symbols: those are
 * libms_tools_ext.so's (tests/standins/mstx_standin.c), whose ranges it records.
 *
 * It exports the MSPTI functions with the signatures of mspti_activity.h / mspti_callback.h and
 * writes records in their documented packed, 8-byte aligned layouts, and it behaves as Ascend's
 * open-source implementation (Ascend/mspti, csrc/) does, not as its headers promise:
 * - a callback's msptiCallbackData.correlationId is never filled (garbage, new each call);
 * - msptiEnableCallback / msptiEnableDomain, and enabling MEMCPY, MEMSET, HCCL or MEMORY, answer
 *   MSPTI_ERROR_WITHOUT_LD_PRELOAD (6) unless LD_PRELOAD names libmspti.so;
 * - record times are CLOCK_REALTIME ns; there is no msptiGetTimestamp and no
 *   msptiActivityGetNumDroppedRecords (a record with no buffer is lost without a count);
 * - device records (KERNEL, MEMCPY, MEMSET) are reported by a thread of the library every 20 ms,
 *   subscribed or not, and the EXTERNAL_CORRELATION mappings after them on that thread; a flush
 *   hands over what has been reported (and host records: MARKER); msptiUnsubscribe drains
 *   nothing and stops profiling: launches and mstx ranges while unsubscribed make no records
 *   (counted for the tests); disabling a kind stops its parser: its unreported records are lost;
 * - the external correlation ids are one stack per process (not per thread): each launch's
 *   correlation id is reported, when EXTERNAL_CORRELATION is enabled, as one record per kind with
 *   a non-empty stack, carrying the stack's top;
 * - msptiActivityGetNextRecord knows the newer kinds (ACL_API 10, NODE_API 11, RUNTIME_API 12)
 *   and fails with MSPTI_ERROR_INNER on a kind it does not know; its position is per thread.
 * Test-only functions (standin_*) play the CANN runtime: standin_launch is an aclrtLaunchKernel
 * (interposed: callbacks on enter and exit), standin_rt_launch an rtKernelLaunch (what
 * triton-ascend's launcher calls: no callbacks); both make the runtime's task track (a new 64-bit
 * correlation id, above 2^32) and a KERNEL record. mstx ranges become MARKER records.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "activity_buffer.h"

#define EXPORT __attribute__((visibility("default")))
#define RECORD __attribute__((__packed__)) __attribute__((aligned(8)))

enum { MSPTI_SUCCESS = 0, MSPTI_ERROR_INVALID_PARAMETER = 1, MSPTI_ERROR_MULTIPLE_SUBSCRIBERS = 2,
       MSPTI_ERROR_MAX_LIMIT_REACHED = 3, MSPTI_ERROR_QUEUE_EMPTY = 5, MSPTI_ERROR_WITHOUT_LD_PRELOAD = 6,
       MSPTI_ERROR_INNER = 999 };
enum { KIND_MARKER = 1, KIND_KERNEL = 2, KIND_API = 3, KIND_HCCL = 4, KIND_MEMORY = 5, KIND_MEMSET = 6,
       KIND_MEMCPY = 7, KIND_EXTERNAL_CORRELATION = 8, KIND_COMMUNICATION = 9, KIND_ACL_API = 10,
       KIND_NODE_API = 11, KIND_RUNTIME_API = 12, KIND_COUNT = 13 };
enum { EXTERNAL_KINDS = 5 };
enum { DOMAIN_RUNTIME = 1 };
enum { FLAG_START = 2, FLAG_END = 4 };

typedef struct {
  uint32_t callbackSite;
  const char* functionName;
  const void* functionParams;
  const void* functionReturnValue;
  const char* symbolName;
  uint64_t correlationId;
  uint64_t reserved1, reserved2;
  uint64_t* correlationData;
} callback_data;

typedef void (*callback_fn)(void* userdata, uint32_t domain, uint32_t cbid, const callback_data* data);
typedef void (*request_fn)(uint8_t** buffer, size_t* size, size_t* max_records);
typedef void (*complete_fn)(uint8_t* buffer, size_t size, size_t valid);

typedef struct RECORD {
  uint32_t kind;
  uint64_t start, end;
  struct { uint32_t deviceId, streamId; } ds;
  uint64_t correlationId;
  const char* type;
  const char* name;
} kernel_record;

typedef struct RECORD {
  uint32_t kind, copyKind;
  uint64_t bytes, start, end;
  uint32_t deviceId, streamId;
  uint64_t correlationId;
  uint8_t isAsync;
} memcpy_record;

typedef struct RECORD {
  uint32_t kind, value;
  uint64_t bytes, start, end;
  uint32_t deviceId, streamId;
  uint64_t correlationId;
  uint8_t isAsync;
} memset_record;

typedef struct RECORD {
  uint32_t kind, externalKind;
  uint64_t externalId, correlationId;
} external_record;

typedef struct RECORD {
  uint32_t kind;
  uint64_t start, end;
  struct { uint32_t processId, threadId; } pt;
  uint64_t correlationId;
  const char* name;
} api_record;

typedef struct RECORD {
  uint32_t kind, flag, sourceKind;
  uint64_t timestamp, id;
  struct { uint32_t processId, threadId; } pt;
  const char* name;
  const char* domain;
} marker_record;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static callback_fn g_cb;
static void* g_cb_arg;
static int g_subscribed, g_held_by_other;
static uint8_t g_enabled_cb[64];
static int g_kinds[KIND_COUNT];
/* Device records, then mappings, waiting for the reporter thread, each in order. */
typedef struct {
  uint8_t* data;
  size_t used, size;
} pending_records;
static pending_records g_device, g_mappings;
static pthread_t g_reporter;
static int g_reporter_started;
static uint64_t g_unprofiled;          /* launches and ranges made while unsubscribed */
static const char* g_launch_at_unsubscribe; /* a kernel another thread launches right then */
uint64_t standin_rt_launch(const char* name, uint32_t stream, uint64_t duration);
/* The process's external correlation stacks, one per kind. */
static uint64_t g_external[EXTERNAL_KINDS][64];
static int g_external_depth[EXTERNAL_KINDS];
static uint64_t g_garbage = 0x9e3779b97f4a7c15ull;
static int g_external_records = 1;  /* 0: the test wants launches whose mapping never comes */
static request_fn g_request;
static complete_fn g_complete;
static activity_buffer g_buffer;
static uint64_t g_next_corr = (1ull << 32) + 7000;
static int g_unknown_next, g_drop_next;
static uint64_t g_lost, g_syncs, g_ranges_open;

/* Strings records point to stay valid for the process (as MSPTI's do). */
static const char* keep(const char* s) {
  static const char* kept[256];
  static int count;
  if (!s) return NULL;
  for (int i = 0; i < count; ++i)
    if (strcmp(kept[i], s) == 0) return kept[i];
  const char* copy = strdup(s);
  if (count < 256) kept[count++] = copy;
  return copy;
}

static uint64_t vendor_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* MSPTI reads LD_PRELOAD once, at its first enable call (a static); with MSPTI_STANDIN_READ_ONCE
 * set the stand-in does so too (in-process tests change the variable between sessions). */
static int preloaded(void) {
  static int once = -1;
  const char* ld = getenv("LD_PRELOAD");
  int now = ld && strstr(ld, "libmspti.so") != NULL;
  if (!getenv("MSPTI_STANDIN_READ_ONCE")) return now;
  if (once < 0) once = now;
  return once;
}

/* Hands a buffer taken out under the lock back to the profiler (called without the lock). */
static void hand_back(taken_buffer t, complete_fn complete) {
  if (t.buf && complete) complete(t.buf, t.size, t.used);
}

static void deliver(void) {
  pthread_mutex_lock(&g_lock);
  taken_buffer t = activity_buffer_take(&g_buffer);
  complete_fn complete = g_complete;
  pthread_mutex_unlock(&g_lock);
  hand_back(t, complete);
}

static size_t record_size(uint32_t kind) {
  switch (kind) {
    case KIND_MARKER: return sizeof(marker_record);
    case KIND_KERNEL: return sizeof(kernel_record);
    case KIND_MEMCPY: return sizeof(memcpy_record);
    case KIND_MEMSET: return sizeof(memset_record);
    case KIND_EXTERNAL_CORRELATION: return sizeof(external_record);
    case KIND_API: case KIND_ACL_API: case KIND_NODE_API: case KIND_RUNTIME_API: return sizeof(api_record);
    default: return 0;
  }
}

/* Appends one record to the buffers (tests/standins/activity_buffer.h); a declined buffer loses
 * it, uncounted by MSPTI (the stand-in counts it for the tests). */
static void buffer_record(const void* record, size_t size) {
  taken_buffer full = {NULL, 0, 0};
  pthread_mutex_lock(&g_lock);
  int lost = 0;
  uint32_t kind = *(const uint32_t*)record;
  int device = kind == KIND_KERNEL || kind == KIND_MEMCPY || kind == KIND_MEMSET;
  if (!g_request) lost = 1;
  else if (device && g_drop_next > 0) --g_drop_next, lost = 1;  /* standin_drop_next: device records */
  else if (!activity_buffer_append(&g_buffer, g_request, record, size, 8, sizeof(kernel_record), &full)) lost = 1;
  if (lost) ++g_lost;
  complete_fn complete = g_complete;
  pthread_mutex_unlock(&g_lock);
  hand_back(full, complete);
}

static void pend(pending_records* p, const void* record, size_t size) {
  if (p->used + size > p->size) {
    p->size = p->size ? 2 * p->size : 1 << 16;
    p->data = realloc(p->data, p->size);
  }
  memcpy(p->data + p->used, record, size);
  p->used += size;
}

/* A host record goes to the buffers at once; device records and mappings wait for the reporter.
 * Nothing is recorded while unsubscribed (profiling is stopped). */
static void write_record(const void* record, size_t size, uint32_t kind) {
  pthread_mutex_lock(&g_lock);
  int enabled = kind < KIND_COUNT && g_kinds[kind] && g_subscribed;
  int device = kind == KIND_KERNEL || kind == KIND_MEMCPY || kind == KIND_MEMSET;
  if (!g_subscribed && kind != KIND_EXTERNAL_CORRELATION) ++g_unprofiled;
  if (enabled && device) pend(&g_device, record, size);
  if (enabled && kind == KIND_EXTERNAL_CORRELATION) pend(&g_mappings, record, size);
  pthread_mutex_unlock(&g_lock);
  if (enabled && !device && kind != KIND_EXTERNAL_CORRELATION) buffer_record(record, size);
}

static void report(pending_records* p) {
  pthread_mutex_lock(&g_lock);
  pending_records taken = *p;
  memset(p, 0, sizeof *p);
  pthread_mutex_unlock(&g_lock);
  for (size_t at = 0; at < taken.used;) {
    uint32_t kind = *(uint32_t*)(taken.data + at);
    size_t size = record_size(kind);
    pthread_mutex_lock(&g_lock);
    int enabled = g_kinds[kind];
    pthread_mutex_unlock(&g_lock);
    if (enabled) buffer_record(taken.data + at, size);
    at += size;
  }
  free(taken.data);
}

/* The library's reporting thread: device records, then the mappings, every 20 ms. */
static void* reporter(void* arg) {
  for (;;) {
    struct timespec tick = {0, 20 * 1000 * 1000};
    nanosleep(&tick, NULL);
    report(&g_device);
    report(&g_mappings);
  }
  return arg;
}

/* The runtime's task track of one launch: a new correlation id, reported to the external
 * correlation stacks' tops (as ContextManager::UpdateAndReportCorrelationId does). */
/* The mappings of correlation id `corr` to the tops of the external correlation stacks now. */
static void report_mappings(uint64_t corr) {
  external_record reports[EXTERNAL_KINDS];
  int count = 0;
  pthread_mutex_lock(&g_lock);
  for (int kind = 0; kind < EXTERNAL_KINDS; ++kind) {
    if (!g_external_depth[kind] || !g_external_records) continue;
    external_record* r = &reports[count++];
    memset(r, 0, sizeof *r);
    r->kind = KIND_EXTERNAL_CORRELATION, r->externalKind = (uint32_t)kind;
    r->externalId = g_external[kind][g_external_depth[kind] - 1], r->correlationId = corr;
  }
  pthread_mutex_unlock(&g_lock);
  for (int i = 0; i < count; ++i) write_record(&reports[i], sizeof reports[i], KIND_EXTERNAL_CORRELATION);
}

static uint64_t new_correlation(void) {
  pthread_mutex_lock(&g_lock);
  uint64_t corr = g_next_corr++;
  pthread_mutex_unlock(&g_lock);
  return corr;
}

/* The runtime's task track of one launch (`corr`, or a new id when 0): reported to the external
 * correlation stacks' tops (as ContextManager::UpdateAndReportCorrelationId does). */
static uint64_t task_track_as(uint64_t corr) {
  if (!corr) corr = new_correlation();
  report_mappings(corr);
  return corr;
}
static uint64_t task_track(void) { return task_track_as(0); }

static void callback(uint32_t cbid, const char* function, uint32_t site) {
  callback_data d;
  memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionName = function;
  pthread_mutex_lock(&g_lock);
  g_garbage = g_garbage * 6364136223846793005ull + 1442695040888963407ull;
  d.correlationId = g_garbage;  /* never filled by MSPTI: whatever the stack held */
  callback_fn cb = g_subscribed && cbid < 64 && g_enabled_cb[cbid] ? g_cb : NULL;
  void* arg = g_cb_arg;
  pthread_mutex_unlock(&g_lock);
  if (cb) cb(arg, DOMAIN_RUNTIME, cbid, &d);
}

static void stamp(uint64_t* start, uint64_t* end, uint64_t duration) {
  *start = vendor_now() + 1000;
  *end = *start + duration;
  pthread_mutex_lock(&g_lock);
  if (g_unknown_next > 0) {
    --g_unknown_next;
    *start = *end = 0;
  }
  pthread_mutex_unlock(&g_lock);
}

/* The host call lasts at least `duration` ns from `start` (a copy's record spans the call). */
static void host_span(uint64_t start, uint64_t duration) {
  while (vendor_now() < start + duration) {
  }
}

/* ---- MSPTI ---- */
EXPORT int msptiSubscribe(void** handle, callback_fn cb, void* arg) {
  int rc = MSPTI_SUCCESS;
  pthread_mutex_lock(&g_lock);
  if (g_subscribed || g_held_by_other) rc = MSPTI_ERROR_MULTIPLE_SUBSCRIBERS;
  else {
    g_subscribed = 1, g_cb = cb, g_cb_arg = arg;
    *handle = (void*)&g_subscribed;
    if (!g_reporter_started) g_reporter_started = pthread_create(&g_reporter, NULL, reporter, NULL) == 0;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}
EXPORT int msptiUnsubscribe(void* handle) {
  pthread_mutex_lock(&g_lock);
  int was = g_subscribed;
  g_subscribed = 0, g_cb = NULL;
  memset(g_enabled_cb, 0, sizeof g_enabled_cb);
  const char* gap = was ? g_launch_at_unsubscribe : NULL;
  pthread_mutex_unlock(&g_lock);
  if (gap) standin_rt_launch(gap, 3, 10);  /* another thread's launch, while profiling is stopped */
  return MSPTI_SUCCESS;
}
EXPORT int msptiEnableCallback(uint32_t enable, void* handle, uint32_t domain, uint32_t cbid) {
  if (!preloaded()) return MSPTI_ERROR_WITHOUT_LD_PRELOAD;
  if (domain != DOMAIN_RUNTIME || cbid >= 64) return MSPTI_ERROR_INVALID_PARAMETER;
  g_enabled_cb[cbid] = (uint8_t)enable;
  return MSPTI_SUCCESS;
}
EXPORT int msptiEnableDomain(uint32_t enable, void* handle, uint32_t domain) {
  if (!preloaded()) return MSPTI_ERROR_WITHOUT_LD_PRELOAD;
  if (domain != DOMAIN_RUNTIME) return MSPTI_ERROR_INVALID_PARAMETER;
  memset(g_enabled_cb, enable ? 1 : 0, sizeof g_enabled_cb);
  return MSPTI_SUCCESS;
}
EXPORT int msptiActivityRegisterCallbacks(request_fn request, complete_fn complete) {
  g_request = request, g_complete = complete;
  return MSPTI_SUCCESS;
}
EXPORT int msptiActivityEnable(uint32_t kind) {
  if (kind == 0 || kind >= KIND_COUNT) return MSPTI_ERROR_INVALID_PARAMETER;
  int needs_preload = kind == KIND_HCCL || kind == KIND_MEMORY || kind == KIND_MEMSET || kind == KIND_MEMCPY;
  if (needs_preload && !preloaded()) return MSPTI_ERROR_WITHOUT_LD_PRELOAD;
  pthread_mutex_lock(&g_lock);
  g_kinds[kind] = 1;
  pthread_mutex_unlock(&g_lock);
  return MSPTI_SUCCESS;
}
EXPORT int msptiActivityDisable(uint32_t kind) {
  if (kind == 0 || kind >= KIND_COUNT) return MSPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_lock);
  g_kinds[kind] = 0;  /* its parser stops: its records still on the device are lost (drain_device) */
  pthread_mutex_unlock(&g_lock);
  return MSPTI_SUCCESS;
}
EXPORT int msptiActivityPushExternalCorrelationId(uint32_t kind, uint64_t id) {
  if (kind == 0 || kind >= EXTERNAL_KINDS) return MSPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_lock);
  int rc = g_external_depth[kind] < 64 ? MSPTI_SUCCESS : MSPTI_ERROR_INNER;
  if (rc == MSPTI_SUCCESS) g_external[kind][g_external_depth[kind]++] = id;
  pthread_mutex_unlock(&g_lock);
  return rc;
}
EXPORT int msptiActivityPopExternalCorrelationId(uint32_t kind, uint64_t* last) {
  if (kind == 0 || kind >= EXTERNAL_KINDS || !last) return MSPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_lock);
  int rc = g_external_depth[kind] ? MSPTI_SUCCESS : MSPTI_ERROR_QUEUE_EMPTY;
  if (rc == MSPTI_SUCCESS) *last = g_external[kind][--g_external_depth[kind]];
  pthread_mutex_unlock(&g_lock);
  return rc;
}
EXPORT int msptiActivityEnableMarkerDomain(const char* name) { return MSPTI_SUCCESS; }
EXPORT int msptiActivityDisableMarkerDomain(const char* name) { return MSPTI_SUCCESS; }
/* As ActivityManager::GetNextRecord: the position is one per thread (`*record` is not read), and
 * goes back to 0 only when a walk reaches the end of a buffer; a walk that ends on a kind it does
 * not know leaves it where it stopped, for the thread's next buffer. */
EXPORT int msptiActivityGetNextRecord(uint8_t* buffer, size_t valid, void** record) {
  static __thread size_t pos;
  if (!buffer) return MSPTI_ERROR_INVALID_PARAMETER;
  if (pos >= valid) {
    pos = 0;
    return MSPTI_ERROR_MAX_LIMIT_REACHED;
  }
  size_t size = record_size(*(uint32_t*)(buffer + pos));
  if (!size) return MSPTI_ERROR_INNER;  /* "invalid kind": the walk ends */
  *record = buffer + pos;
  pos += (size + 7) & ~(size_t)7;
  return MSPTI_SUCCESS;
}
/* Hands over what the buffers hold: device records the reporter thread has reported. */
EXPORT int msptiActivityFlushAll(uint32_t flag) { deliver(); return MSPTI_SUCCESS; }
EXPORT int msptiActivityFlushPeriod(uint32_t ms) { return MSPTI_SUCCESS; }

/* ---- what libms_tools_ext.so's mstx calls reach (tests/standins/mstx_standin.c) ---- */
/* MSPTI exports no mstx* symbols: mstx lives in libms_tools_ext.so, whose ranges MSPTI records as
 * MARKER records. `delta`: +1 a range opened, -1 closed. */
EXPORT void standin_mspti_marker(const char* domain, const char* message, uint32_t flag, uint64_t id, int delta) {
  marker_record m;
  memset(&m, 0, sizeof m);
  m.kind = KIND_MARKER, m.flag = flag, m.timestamp = vendor_now(), m.id = id;
  m.name = keep(message), m.domain = keep(domain);
  pthread_mutex_lock(&g_lock);
  g_ranges_open += (uint64_t)(int64_t)delta;
  pthread_mutex_unlock(&g_lock);
  write_record(&m, sizeof m, KIND_MARKER);
}

/* ---- aclrt ---- */
EXPORT int aclrtSynchronizeDevice(void) {
  pthread_mutex_lock(&g_lock);
  ++g_syncs;
  pthread_mutex_unlock(&g_lock);
  return 0;
}
EXPORT int aclrtGetDeviceCount(uint32_t* count) { *count = 1; return 0; }
EXPORT const char* aclrtGetSocName(void) { return "Ascend910B (stand-in)"; }

/* ---- test-only control ---- */
/* The runtime side of a launch of kernel `name` on `stream`: task track, then the kernel record. */
static uint64_t run_kernel_as(uint64_t corr, const char* name, uint32_t stream, uint64_t duration) {
  corr = task_track_as(corr);
  kernel_record k;
  memset(&k, 0, sizeof k);
  k.kind = KIND_KERNEL;
  uint64_t start, end;
  stamp(&start, &end, duration);
  k.start = start, k.end = end;
  k.ds.deviceId = 0, k.ds.streamId = stream, k.correlationId = corr;
  k.type = "KERNEL_AIVEC", k.name = keep(name);
  write_record(&k, sizeof k, KIND_KERNEL);
  return corr;
}
static uint64_t run_kernel(const char* name, uint32_t stream, uint64_t duration) {
  return run_kernel_as(0, name, stream, duration);
}
/* aclrtLaunchKernel* (callback id `cbid`, e.g. 10 LAUNCH or 13 AIV_LAUNCH): interposed by MSPTI,
 * which also maps the launch's correlation id before the ENTER callback, to whatever the stacks
 * hold then (another thread's window), and again inside it. */
EXPORT uint64_t standin_launch(const char* name, uint32_t cbid, uint32_t stream, uint64_t duration) {
  uint64_t corr = new_correlation();
  report_mappings(corr);
  callback(cbid, "aclrtLaunchKernel", 0);
  run_kernel_as(corr, name, stream, duration);
  callback(cbid, "aclrtLaunchKernel", 1);
  return corr;
}
/* rtKernelLaunch, as triton-ascend's launcher calls it: MSPTI sees no call, only the task. */
EXPORT uint64_t standin_rt_launch(const char* name, uint32_t stream, uint64_t duration) {
  return run_kernel(name, stream, duration);
}
/* aclrtMemcpyAsync as MSPTI reports it: the task track (and its mapping, to whatever the external
 * stack holds then) comes before the ENTER callback, and the record's times are host times around
 * the whole call (CLOCK_REALTIME), not the copy's time on the device. */
EXPORT uint64_t standin_memcpy(uint32_t copy_kind, uint64_t bytes, uint32_t stream, uint64_t duration) {
  uint64_t start = vendor_now();
  uint64_t corr = task_track();
  host_span(start, duration / 2);  /* the call's own work around the callbacks */
  callback(24, "aclrtMemcpyAsync", 0);
  callback(24, "aclrtMemcpyAsync", 1);
  host_span(vendor_now(), duration / 2);
  memcpy_record m;
  memset(&m, 0, sizeof m);
  m.kind = KIND_MEMCPY, m.copyKind = copy_kind, m.bytes = bytes, m.deviceId = 0, m.streamId = stream;
  m.start = start, m.end = vendor_now();
  m.correlationId = corr, m.isAsync = 1;
  write_record(&m, sizeof m, KIND_MEMCPY);
  return corr;
}
/* aclrtMemsetAsync: no callback is enabled for it; the record carries a correlation id (though
 * MSPTI's documentation says it is not filled in yet) and host times around the call. */
EXPORT uint64_t standin_memset(uint64_t bytes, uint32_t stream, uint64_t duration) {
  uint64_t start = vendor_now();
  uint64_t corr = task_track();
  host_span(start, duration);
  memset_record m;
  memset(&m, 0, sizeof m);
  m.kind = KIND_MEMSET, m.bytes = bytes, m.deviceId = 0xFFFFFFFFu, m.streamId = stream;
  m.start = start, m.end = vendor_now();
  m.correlationId = corr;
  write_record(&m, sizeof m, KIND_MEMSET);
  return corr;
}
/* A record of kind `kind` (e.g. ACL_API 10 of newer versions) in the host buffer, as though enabled. */
EXPORT void standin_api_record(uint32_t kind) {
  api_record a;
  memset(&a, 0, sizeof a);
  a.kind = kind, a.start = vendor_now(), a.end = a.start + 10, a.name = "aclnnAdd";
  buffer_record(&a, sizeof a);
}
/* The tests' own CLOCK_REALTIME, for comparing record times. */
EXPORT uint64_t standin_now(void) { return vendor_now(); }
EXPORT void standin_unknown_time_next(int n) { pthread_mutex_lock(&g_lock); g_unknown_next = n; pthread_mutex_unlock(&g_lock); }
EXPORT void standin_drop_next(int n) { pthread_mutex_lock(&g_lock); g_drop_next = n; pthread_mutex_unlock(&g_lock); }
EXPORT void standin_launch_at_unsubscribe(const char* name) {
  pthread_mutex_lock(&g_lock);
  g_launch_at_unsubscribe = name ? keep(name) : NULL;
  pthread_mutex_unlock(&g_lock);
}
EXPORT void standin_hold_subscriber(int held) { g_held_by_other = held; }
EXPORT void standin_external_records(int on) { pthread_mutex_lock(&g_lock); g_external_records = on; pthread_mutex_unlock(&g_lock); }
/* 0 subscribed, 1 records in the buffer, 2 device syncs, 3 buffers delivered, 4 mstx ranges open,
 * 5 kernel kind enabled, 6 marker kind enabled, 7 device records not yet drained, 8 records lost
 * (no buffer; MSPTI counts none), 9 external ids on the stacks, 10 launches and ranges while
 * unsubscribed (no records) */
EXPORT uint64_t standin_state(int what) {
  switch (what) {
    case 0: return (uint64_t)g_subscribed;
    case 1: return g_buffer.pending;
    case 2: return g_syncs;
    case 3: return g_buffer.delivered;
    case 4: return g_ranges_open;
    case 5: return (uint64_t)g_kinds[KIND_KERNEL];
    case 6: return (uint64_t)g_kinds[KIND_MARKER];
    case 7: {
      uint64_t n = 0;
      pthread_mutex_lock(&g_lock);
      for (size_t at = 0; at < g_device.used; at += record_size(*(uint32_t*)(g_device.data + at))) ++n;
      pthread_mutex_unlock(&g_lock);
      return n;
    }
    case 10: return g_unprofiled;
    case 8: return g_lost;
    case 9: {
      uint64_t n = 0;
      for (int k = 0; k < EXTERNAL_KINDS; ++k) n += (uint64_t)g_external_depth[k];
      return n;
    }
    default: return 0;
  }
}
