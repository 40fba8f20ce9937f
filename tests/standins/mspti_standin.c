/* A stand-in for libmspti.so (Huawei Ascend), with the mstx entry points and the two aclrt
 * calls the cann backend makes, built by the tests (tests/standins/build.py).
 *
 * It exports the MSPTI functions with the signatures of mspti_activity.h / mspti_callback.h and
 * writes records in their documented packed, 8-byte aligned layouts (msptiActivityKernel,
 * msptiActivityMemcpy, msptiActivityMemset, msptiActivityMarker). Test-only functions (standin_*)
 * play the CANN runtime: a "launch" calls the subscriber's RUNTIME-domain callback on enter and
 * exit with a fresh 64-bit correlation id (above 2^32, as a long-running process would see) and
 * writes a KERNEL record into a buffer from the buffer-request callback; full buffers, and every
 * buffer at a flush, go back through the buffer-complete callback, which (as documented) carries
 * no context or stream. mstx ranges become MARKER records (START, END) of their domain. Record
 * times are on a clock of their own (host monotonic + 500 s).
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
       MSPTI_ERROR_MAX_LIMIT_REACHED = 3 };
enum { KIND_MARKER = 1, KIND_KERNEL = 2, KIND_MEMSET = 6, KIND_MEMCPY = 7 };
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
static int g_kinds[16];
static request_fn g_request;
static complete_fn g_complete;
static activity_buffer g_buffer;
static uint64_t g_next_corr = (1ull << 32) + 7000;
static uint64_t g_next_range = 1;
static int g_unknown_next, g_drop_next;
static uint64_t g_dropped, g_syncs, g_ranges_open;
#define VENDOR_CLOCK_OFFSET 500000000000ull

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
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + VENDOR_CLOCK_OFFSET;
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
  if (!activity_buffer_append(&g_buffer, g_request, record, size, 1, sizeof(kernel_record), &full)) ++g_dropped;
  complete_fn complete = g_complete;
  pthread_mutex_unlock(&g_lock);
  hand_back(full, complete);
}

static void callback(uint32_t cbid, const char* function, uint32_t site, uint64_t corr) {
  callback_data d;
  memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionName = function;
  d.correlationId = corr;
  pthread_mutex_lock(&g_lock);
  callback_fn cb = g_subscribed && cbid < 64 && g_enabled_cb[cbid] ? g_cb : NULL;
  void* arg = g_cb_arg;
  pthread_mutex_unlock(&g_lock);
  if (cb) cb(arg, DOMAIN_RUNTIME, cbid, &d);
}

static uint64_t next_correlation(void) {
  pthread_mutex_lock(&g_lock);
  uint64_t corr = g_next_corr++;
  pthread_mutex_unlock(&g_lock);
  return corr;
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

/* ---- MSPTI ---- */
EXPORT int msptiSubscribe(void** handle, callback_fn cb, void* arg) {
  int rc = MSPTI_SUCCESS;
  pthread_mutex_lock(&g_lock);
  if (g_subscribed || g_held_by_other) rc = MSPTI_ERROR_MULTIPLE_SUBSCRIBERS;
  else {
    g_subscribed = 1, g_cb = cb, g_cb_arg = arg;
    *handle = (void*)&g_subscribed;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}
EXPORT int msptiUnsubscribe(void* handle) {
  pthread_mutex_lock(&g_lock);
  g_subscribed = 0, g_cb = NULL;
  memset(g_enabled_cb, 0, sizeof g_enabled_cb);
  pthread_mutex_unlock(&g_lock);
  return MSPTI_SUCCESS;
}
EXPORT int msptiEnableCallback(uint32_t enable, void* handle, uint32_t domain, uint32_t cbid) {
  if (domain != DOMAIN_RUNTIME || cbid >= 64) return MSPTI_ERROR_INVALID_PARAMETER;
  g_enabled_cb[cbid] = (uint8_t)enable;
  return MSPTI_SUCCESS;
}
EXPORT int msptiEnableDomain(uint32_t enable, void* handle, uint32_t domain) {
  if (domain != DOMAIN_RUNTIME) return MSPTI_ERROR_INVALID_PARAMETER;
  memset(g_enabled_cb, enable ? 1 : 0, sizeof g_enabled_cb);
  return MSPTI_SUCCESS;
}
EXPORT int msptiActivityRegisterCallbacks(request_fn request, complete_fn complete) {
  g_request = request, g_complete = complete;
  return MSPTI_SUCCESS;
}
EXPORT int msptiActivityEnable(uint32_t kind) {
  if (kind == 0 || kind > 9) return MSPTI_ERROR_INVALID_PARAMETER;
  g_kinds[kind] = 1;
  return MSPTI_SUCCESS;
}
EXPORT int msptiActivityDisable(uint32_t kind) {
  if (kind == 0 || kind > 9) return MSPTI_ERROR_INVALID_PARAMETER;
  g_kinds[kind] = 0;
  return MSPTI_SUCCESS;
}
EXPORT int msptiActivityEnableMarkerDomain(const char* name) { return MSPTI_SUCCESS; }
EXPORT int msptiActivityDisableMarkerDomain(const char* name) { return MSPTI_SUCCESS; }
static size_t record_size(uint32_t kind) {
  switch (kind) {
    case KIND_MEMCPY: return sizeof(memcpy_record);
    case KIND_MEMSET: return sizeof(memset_record);
    case KIND_MARKER: return sizeof(marker_record);
    default: return sizeof(kernel_record);
  }
}
EXPORT int msptiActivityGetNextRecord(uint8_t* buffer, size_t valid, void** record) {
  uint8_t* next = *record ? (uint8_t*)*record + record_size(*(uint32_t*)*record) : buffer;
  if (next >= buffer + valid) return MSPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return MSPTI_SUCCESS;
}
EXPORT int msptiActivityFlushAll(uint32_t flag) { deliver(); return MSPTI_SUCCESS; }
EXPORT int msptiActivityFlushPeriod(uint32_t ms) { return MSPTI_SUCCESS; }
EXPORT int msptiActivityGetNumDroppedRecords(void* context, uint32_t stream, size_t* dropped) {
  if (!dropped) return MSPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_lock);
  *dropped = g_dropped;  /* the library's global count, reset by reading (context is ignored) */
  g_dropped = 0;
  pthread_mutex_unlock(&g_lock);
  return MSPTI_SUCCESS;
}
EXPORT int msptiGetTimestamp(uint64_t* t) {
  if (!t) return MSPTI_ERROR_INVALID_PARAMETER;
  *t = vendor_now();
  return MSPTI_SUCCESS;
}

/* ---- mstx ---- */
typedef struct { const char* name; } mstx_domain;
static void marker(const char* domain, const char* message, uint32_t flag, uint64_t id) {
  marker_record m;
  memset(&m, 0, sizeof m);
  m.kind = KIND_MARKER, m.flag = flag, m.timestamp = vendor_now(), m.id = id;
  m.name = keep(message), m.domain = domain;
  write_record(&m, sizeof m, KIND_MARKER);
}
EXPORT void* mstxDomainCreateA(const char* name) {
  mstx_domain* d = malloc(sizeof *d);
  d->name = keep(name);
  return d;
}
EXPORT void mstxDomainDestroy(void* domain) { free(domain); }
EXPORT uint64_t mstxDomainRangeStartA(void* domain, const char* message, void* stream) {
  pthread_mutex_lock(&g_lock);
  uint64_t id = g_next_range++;
  ++g_ranges_open;
  pthread_mutex_unlock(&g_lock);
  marker(((mstx_domain*)domain)->name, message, FLAG_START, id);
  return id;
}
EXPORT void mstxDomainRangeEnd(void* domain, uint64_t id) {
  pthread_mutex_lock(&g_lock);
  --g_ranges_open;
  pthread_mutex_unlock(&g_lock);
  marker(((mstx_domain*)domain)->name, NULL, FLAG_END, id);
}
EXPORT uint64_t mstxRangeStartA(const char* message, void* stream) {
  static mstx_domain global = {"default"};
  return mstxDomainRangeStartA(&global, message, stream);
}
EXPORT void mstxRangeEnd(uint64_t id) {
  static mstx_domain global = {"default"};
  mstxDomainRangeEnd(&global, id);
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
/* A launch (callback id `cbid`, e.g. 10 LAUNCH or 13 AIV_LAUNCH) of kernel `name` on `stream`. */
EXPORT uint64_t standin_launch(const char* name, uint32_t cbid, uint32_t stream, uint64_t duration) {
  uint64_t corr = next_correlation();
  callback(cbid, "aclrtLaunchKernel", 0, corr);
  kernel_record k;
  memset(&k, 0, sizeof k);
  k.kind = KIND_KERNEL;
  uint64_t start, end;
  stamp(&start, &end, duration);
  k.start = start, k.end = end;
  k.ds.deviceId = 0, k.ds.streamId = stream, k.correlationId = corr;
  k.type = "KERNEL_AIVEC", k.name = keep(name);
  write_record(&k, sizeof k, KIND_KERNEL);
  callback(cbid, "aclrtLaunchKernel", 1, corr);
  return corr;
}
EXPORT uint64_t standin_memcpy(uint32_t copy_kind, uint64_t bytes, uint32_t stream, uint64_t duration) {
  uint64_t corr = next_correlation();
  callback(24, "aclrtMemcpyAsync", 0, corr);
  memcpy_record m;
  memset(&m, 0, sizeof m);
  m.kind = KIND_MEMCPY, m.copyKind = copy_kind, m.bytes = bytes, m.deviceId = 0, m.streamId = stream;
  uint64_t start, end;
  stamp(&start, &end, duration);
  m.start = start, m.end = end;
  m.correlationId = corr, m.isAsync = 1;
  write_record(&m, sizeof m, KIND_MEMCPY);
  callback(24, "aclrtMemcpyAsync", 1, corr);
  return corr;
}
/* aclrtMemsetAsync: MSPTI documents the memset record's correlation id as not yet filled in. */
EXPORT void standin_memset(uint64_t bytes, uint32_t stream, uint64_t duration) {
  memset_record m;
  memset(&m, 0, sizeof m);
  m.kind = KIND_MEMSET, m.bytes = bytes, m.deviceId = 0xFFFFFFFFu, m.streamId = stream;
  uint64_t start, end;
  stamp(&start, &end, duration);
  m.start = start, m.end = end;
  write_record(&m, sizeof m, KIND_MEMSET);
}
EXPORT void standin_unknown_time_next(int n) { pthread_mutex_lock(&g_lock); g_unknown_next = n; pthread_mutex_unlock(&g_lock); }
EXPORT void standin_drop_next(int n) { pthread_mutex_lock(&g_lock); g_drop_next = n; pthread_mutex_unlock(&g_lock); }
EXPORT void standin_hold_subscriber(int held) { g_held_by_other = held; }
/* 0 subscribed, 1 pending records, 2 device syncs, 3 buffers delivered, 4 mstx ranges open,
 * 5 kernel kind enabled, 6 marker kind enabled */
EXPORT uint64_t standin_state(int what) {
  switch (what) {
    case 0: return (uint64_t)g_subscribed;
    case 1: return g_buffer.pending;
    case 2: return g_syncs;
    case 3: return g_buffer.delivered;
    case 4: return g_ranges_open;
    case 5: return (uint64_t)g_kinds[KIND_KERNEL];
    case 6: return (uint64_t)g_kinds[KIND_MARKER];
    default: return 0;
  }
}
