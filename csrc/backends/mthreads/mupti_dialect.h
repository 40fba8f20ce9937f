// The MUPTI (Moore Threads) dialect of the shared activity tracer. MUPTI mirrors CUPTI, so
// this is CUPTI's dialect with MUPTI's table and types, plus the documented MUSA 4.3 hazards:
// - activity records may carry zero timestamps (a forced flush can hand over kernels it has no
//   time for): they take their launch callback's host times (callback_times.h), counted as
//   callback-timed, or are discarded and counted when those are gone;
// - MUPTI's clock is mapped to the host's by a line through samples at start and at each flush
//   (clock_fit.h), not one offset;
// - a non-forced flush can spin: every flush is forced (as the shared tracer does anyway);
// - the library can double-free when torn down: it is never dlclosed, and never finalized
//   (stop only unsubscribes, which frees the subscriber slot for the next session or tool).
#pragma once
#include <array>
#include <string>
#include <vector>

#include "backends/dialect/dialect_tracer.h"
#include "backends/mthreads/callback_times.h"
#include "backends/mthreads/mupti_api.h"
#include "backends/mthreads/musa_driver.h"
#include "core/strings.h"

namespace ftp {

struct MuptiDialect {
  using Api = MuptiApi;
  using Result = MUptiResult;
  using Kind = MUpti_ActivityKind;
  using Domain = MUpti_CallbackDomain;
  using CallbackId = MUpti_CallbackId;
  using Subscriber = MUpti_SubscriberHandle;
  using Context = MUcontext;
  using Record = MUpti_Activity;
  using Payload = const void*;
  using CallbackData = MUpti_CallbackData;

  static constexpr const char* kName = "MUPTI";
  static constexpr DeviceType kDeviceType = DeviceType::MUSA;
  static constexpr Result kSuccess = MUPTI_SUCCESS;
  static constexpr Kind kKernelKind = MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  static constexpr std::array<Kind, 3> kActivityKinds = {MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                                         MUPTI_ACTIVITY_KIND_MEMCPY, MUPTI_ACTIVITY_KIND_MEMSET};
  static constexpr Domain kDriverDomain = MUPTI_CB_DOMAIN_DRIVER_API;
  static constexpr uint32_t kFlushForced = MUPTI_ACTIVITY_FLAG_FLUSH_FORCED;
  static constexpr bool kCompleteHasContext = true;
  static constexpr bool kFinalizeAtStop = false;
  static constexpr bool kKeepAttached = false;  // see DialectTracer::release
  static constexpr bool kQuietWhenIdle = true;   // MUPTI mirrors CUPTI's enable and disable calls
  // MUSA 4.3: a second forced flush at stop can wait forever; buffers handed back after the
  // stop's one flush are not read (teardown can corrupt a buffer the library retains).
  static constexpr bool kFlushOnceAtStop = true;
  static constexpr bool kExternalCorrelation = false;
  static constexpr bool kRealtimeClock = false;
  static constexpr bool kUnsubscribeBeforeFlush = false;
  static constexpr bool kClockFit = true;
  static constexpr bool kCallbackTimes = true;
  enum Counter : size_t { kZeroTimestamps = 0, kUnknownKinds = 1, kTruncated = 2, kCallbackTimed = 3 };
  static constexpr std::array<const char*, 4> kCounterNames = {"zero_timestamp_records", "unknown_kind_records",
                                                               "truncated_records", "callback_timed_records"};
  // Callback ids scanned for launch/copy/set names in each of the driver and runtime domains.
  static constexpr uint32_t kMaxCallbackId = 2048;

  static bool kindRequired(Kind) { return true; }
  static bool isSubscriberConflict(Result rc) { return rc == MUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; }
  static std::string conflictMessage(const std::string& path, const std::string& why) {
    return "another MUPTI client already holds the profiling slot (torch_musa's profiler, i.e. "
           "torch.profiler with MUSA activities, Moore Threads' profiling tools, a second copy of "
           "libmupti, or another tool); MUPTI allows one subscriber per process: stop it before "
           "starting this session. Library: " + path + " (" + why + ")";
  }

  // Launch path.
  static bool isLaunchDomain(Domain d) { return d == MUPTI_CB_DOMAIN_DRIVER_API || d == MUPTI_CB_DOMAIN_RUNTIME_API; }
  static const CallbackData* callbackData(Payload p) { return static_cast<const CallbackData*>(p); }
  static bool isExit(const CallbackData* cb) { return cb->callbackSite == MUPTI_API_EXIT; }
  static uint32_t correlation(const CallbackData* cb) { return cb->correlationId; }
  static Context context(const CallbackData* cb) { return cb->context; }
  // When a callback leaves its context unset: the launching thread's current one.
  static Context currentContext() { return MusaDriver::instance().currentContext(); }
  static uint32_t launchEnter() { return 0; }
  static void launchExit() {}
  static CallbackTimes& callbackTimes();  // mupti_tracer.cpp
  static void noteEnter(uint32_t correlation) { callbackTimes().enter(correlation); }
  static void noteExit(uint32_t correlation) { callbackTimes().exit(correlation); }
  static bool joinRecord(DeviceRecord&) { return true; }
  template <typename F>
  static void finishRecords(F&&, bool, uint64_t) {}
  static void onOtherCallback(DialectTracer<MuptiDialect>&, Domain, CallbackId, Payload) {}

  // Setup.
  static void selectCallbacks(const Api& api, std::vector<TracedCallback<Domain, CallbackId>>& out);
  static void enableExtraCallbacks(const Api&, Subscriber) {}
  static void onStart(const Api& api) {
    if (api.enableLaunchAttributes) api.enableLaunchAttributes(1);  // grid/block in kernel records
  }
  static void synchronize(const std::vector<Context>& contexts);

  // Record path. No public mupti header exists: layouts are CUPTI's by analogy, so a record
  // is read only when its kind is known and its whole layout lies within the buffer.
  static bool truncated(const Record* record, size_t size, DecodeContext& c) {
    if (fitsIn(record, size, c)) return false;
    c.counters[kTruncated].fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  static Decoded decode(const Record* record, DeviceRecord& out, DecodeContext& c) {
    if (!fitsIn(record, sizeof(Record), c)) return truncated(record, sizeof(Record), c), Decoded::Discard;
    switch (record->kind) {
      case MUPTI_ACTIVITY_KIND_KERNEL:
      case MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const MUpti_ActivityKernel6*>(record);
        if (truncated(record, sizeof(*k), c)) return Decoded::Discard;
        out.kind = RecordKind::Kernel;
        out.correlation = k->correlationId;
        if (!times(k->start, k->end, out, c)) return Decoded::Discard;
        out.deviceId = k->deviceId;
        out.streamId = k->streamId;
        out.grid[0] = k->gridX, out.grid[1] = k->gridY, out.grid[2] = k->gridZ;
        out.block[0] = k->blockX, out.block[1] = k->blockY, out.block[2] = k->blockZ;
        out.registers = k->registersPerThread;
        out.staticSharedMemory = k->staticSharedMemory;
        out.dynamicSharedMemory = k->dynamicSharedMemory;
        // graphNodeId is left 0: without graph-node callbacks no capture context is known, so a
        // graph's kernels stay directly under their graph launch (one launch, several records).
        c.names.assign(k->name, out);
        return Decoded::Record;
      }
      case MUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const MUpti_ActivityMemcpy4*>(record);
        if (truncated(record, sizeof(*m), c)) return Decoded::Discard;
        return transfer(*m, RecordKind::Memcpy, intern(copyKindName(m->copyKind)), out, c);
      }
      case MUPTI_ACTIVITY_KIND_MEMSET: {
        static const uint32_t memsetName = intern("memset");
        if (truncated(record, sizeof(MUpti_ActivityMemset3), c)) return Decoded::Discard;
        return transfer(*reinterpret_cast<const MUpti_ActivityMemset3*>(record), RecordKind::Memset, memsetName, out, c);
      }
      default:  // a kind this build does not know (or never enabled): skipped, counted
        c.counters[kUnknownKinds].fetch_add(1, std::memory_order_relaxed);
        return Decoded::Skip;
    }
  }

  // The record's times on the host clock (out.correlation set): MUPTI's own, else its launch
  // call's host times; false when neither is known (counted).
  static bool times(uint64_t start, uint64_t end, DeviceRecord& out, DecodeContext& c) {
    if (start != 0 && end != 0) {
      out.startNs = c.fit.toHost(start, c.clockOffset);
      out.endNs = out.startNs + (end - start);  // the vendor's duration (clock_fit.h)
      return true;
    }
    if (callbackTimes().find(out.correlation, out.startNs, out.endNs)) {
      c.counters[kCallbackTimed].fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    c.counters[kZeroTimestamps].fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  template <typename Transfer>
  static Decoded transfer(const Transfer& m, RecordKind kind, uint32_t name, DeviceRecord& out, DecodeContext& c) {
    out.kind = kind;
    out.correlation = m.correlationId;
    if (!times(m.start, m.end, out, c)) return Decoded::Discard;
    out.deviceId = m.deviceId;
    out.streamId = m.streamId;
    out.bytes = m.bytes;
    out.name = name;
    return Decoded::Record;
  }

  static const char* copyKindName(uint8_t kind) {
    switch (kind) {
      case MUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
      case MUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
      case MUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
      case MUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
      case MUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
      default: return "memcpy";
    }
  }
};

using MuptiTracer = DialectTracer<MuptiDialect>;
extern template class DialectTracer<MuptiDialect>;

}  // namespace ftp
