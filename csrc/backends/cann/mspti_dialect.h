// The MSPTI (Huawei Ascend) dialect of the shared activity tracer. Where MSPTI differs from
// CUPTI (facts from Ascend's open-source MSPTI, not only its headers):
// - callbacks never fill msptiCallbackData.correlationId: launches are keyed on external
//   correlation ids of our own, joined to MSPTI's correlation ids by its EXTERNAL_CORRELATION
//   records (backends/cann/external_join.h); Triton launches (triton-ascend calls rtKernelLaunch,
//   which MSPTI does not interpose) come through Triton's launch hook, the callbacks only see
//   other libraries' aclrtLaunchKernel* calls, and only with libmspti.so in LD_PRELOAD;
// - record times are CLOCK_REALTIME ns and there is no timestamp call (kRealtimeClock);
// - there is no dropped-record count; records of unknown kinds are skipped and counted;
// - device records are reported continuously, every 20 ms; unsubscribing stops profiling, so
//   a flush while sessions go on stays subscribed and waits one report period (kReportWaitMs);
//   stop unsubscribes, waits, then flushes;
// - the buffer-complete callback carries no context or stream; correlation ids are 64-bit (the
//   low 32 bits are used on both paths); kernels with start == end == 0 have no known time
//   and are discarded and counted; MARKER records (mstx ranges) are counted, not reported.
// There is no finalize, and the library is never dlclosed.
#pragma once
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cann/external_join.h"
#include "backends/cann/mspti_api.h"
#include "backends/dialect/dialect_tracer.h"
#include "core/strings.h"

namespace ftp {

// The mstx domain our scopes are mirrored in (mode option mstx_enabled=true).
constexpr const char* kMstxDomain = "flagtree_profiler";

struct MsptiDialect {
  using Api = MsptiApi;
  using Result = msptiResult;
  using Kind = msptiActivityKind;
  using Domain = msptiCallbackDomain;
  using CallbackId = msptiCallbackId;
  using Subscriber = msptiSubscriberHandle;
  using Context = void*;  // MSPTI reports none
  using Record = msptiActivity;
  using Payload = const msptiCallbackData*;
  using CallbackData = msptiCallbackData;

  static constexpr const char* kName = "MSPTI";
  static constexpr DeviceType kDeviceType = DeviceType::NPU;
  static constexpr Result kSuccess = MSPTI_SUCCESS;
  static constexpr Kind kKernelKind = MSPTI_ACTIVITY_KIND_KERNEL;
  // MEMCPY and MEMSET need LD_PRELOAD as the callbacks do: without it they are refused (listed).
  static constexpr std::array<Kind, 5> kActivityKinds = {MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                                         MSPTI_ACTIVITY_KIND_KERNEL, MSPTI_ACTIVITY_KIND_MEMCPY,
                                                         MSPTI_ACTIVITY_KIND_MEMSET, MSPTI_ACTIVITY_KIND_MARKER};
  static constexpr Domain kDriverDomain = MSPTI_CB_DOMAIN_INVALID;  // one domain: all ids are "runtime"
  static constexpr uint32_t kFlushForced = 1;
  static constexpr bool kCompleteHasContext = false;
  static constexpr bool kFinalizeAtStop = false;
  static constexpr bool kKeepAttached = false;  // see DialectTracer::release
  static constexpr bool kExternalCorrelation = true;
  static constexpr bool kRealtimeClock = true;
  static constexpr bool kUnsubscribeBeforeFlush = true;
  // No quiet while sessions are deactivated (kQuietWhenIdle): disabling a kind stops its parser,
  // which loses the records it has not reported yet (see DialectTracer::stop).
  static constexpr bool kQuietWhenIdle = false;
  // MSPTI reports device records every 20 ms on its own threads: a flush waits this long after
  // the device is idle (Huawei's own monitor waits 50 ms between unsubscribing and flushing).
  static constexpr int kReportWaitMs = 50;
  // msptiActivityGetNextRecord keeps its position per thread and resets it only at a buffer's end.
  static constexpr bool kThreadCursor = true;
  static constexpr Result kEndOfBuffer = MSPTI_ERROR_MAX_LIMIT_REACHED;
  static constexpr bool kFlushOnceAtStop = false;
  enum Counter : size_t { kUnknownTimes = 0, kMarkers = 1, kScopeMarkers = 2, kUnknownKinds = 3 };
  static constexpr std::array<const char*, 4> kCounterNames = {"unknown_timestamp_records", "marker_records",
                                                               "scope_marker_records", "unknown_kind_records"};

  // Kernels, and the mapping that joins them to launches, are what the backend is for.
  static bool kindRequired(Kind kind) {
    return kind == MSPTI_ACTIVITY_KIND_KERNEL || kind == MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  }
  static bool isSubscriberConflict(Result rc) { return rc == MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; }
  static std::string conflictMessage(const std::string& path, const std::string& why) {
    return "another profiler already uses MSPTI in this process (msprof, torch_npu's profiler, MindStudio, "
           "or another MSPTI tool); Ascend documents that MSPTI must not run beside another profiling "
           "tool: stop it before starting this session. Library: " + path + " (" + why + ")";
  }

  // Launch path.
  static bool isLaunchDomain(Domain d) { return d == MSPTI_CB_DOMAIN_RUNTIME; }
  static const CallbackData* callbackData(Payload p) { return p; }
  static bool isExit(const CallbackData* cb) { return cb->callbackSite == MSPTI_API_EXIT; }
  static uint32_t correlation(const CallbackData*) { return 0; }  // never filled by MSPTI: not read
  static Context context(const CallbackData*) { return nullptr; }
  static Context currentContext() { return nullptr; }
  // The one join of the process (MSPTI allows one subscriber); mspti_tracer.cpp.
  static ExternalJoin& external();
  // A copy's window joins its record by host span (external_join.h).
  static uint32_t launchEnter(uint32_t cbid) { return external().enter(false, cbid == MSPTI_CBID_RUNTIME_MEMCPY_ASYNC); }
  static void launchExit() { external().exit(false); }
  // A record whose mapping has not come, and every copy (its mapping names another launch), is
  // held for the end of the drain (external_join.h).
  static bool joinRecord(DeviceRecord& r) {
    if (external().translate(r)) return true;
    external().hold(r);
    return false;
  }
  template <typename F>
  static void finishRecords(F&& deliver, bool final, uint64_t drainBeganNs) {
    external().finish(deliver, final, drainBeganNs);
  }
  static void onOtherCallback(DialectTracer<MsptiDialect>&, Domain, CallbackId, Payload) {}

  // Setup.
  static void selectCallbacks(const Api&, std::vector<TracedCallback<Domain, CallbackId>>& out) {
    for (CallbackId cbid : {MSPTI_CBID_RUNTIME_LAUNCH, MSPTI_CBID_RUNTIME_CPU_LAUNCH, MSPTI_CBID_RUNTIME_AICPU_LAUNCH,
                            MSPTI_CBID_RUNTIME_AIV_LAUNCH, MSPTI_CBID_RUNTIME_FFTS_LAUNCH,
                            MSPTI_CBID_RUNTIME_MEMCPY_ASYNC})
      out.push_back({MSPTI_CB_DOMAIN_RUNTIME, cbid, false});
  }
  static void enableExtraCallbacks(const Api&, Subscriber) {}
  static void onStart(const Api& api) { external().setCalls(api.pushExternal, api.popExternal); }
  static void synchronize(const std::vector<Context>&);

  // Record path.
  static uint32_t knownId(uint32_t id) { return id == kMsptiInvalidId ? 0 : id; }

  static Decoded decode(const Record* record, DeviceRecord& out, DecodeContext& c) {
    switch (record->kind) {
      case MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* e = reinterpret_cast<const msptiActivityExternalCorrelation*>(record);
        if (e->externalKind == ExternalJoin::kExternalKind) external().map(e->externalId, e->correlationId);
        return Decoded::Skip;
      }
      case MSPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const msptiActivityKernel*>(record);
        if (k->start == 0 && k->end == 0) {
          c.counters[kUnknownTimes].fetch_add(1, std::memory_order_relaxed);
          return Decoded::Discard;
        }
        out.kind = RecordKind::Kernel;
        out.correlation = uint32_t(k->correlationId);
        out.deviceId = knownId(k->ds.deviceId);
        out.streamId = knownId(k->ds.streamId);
        out.startNs = k->start - c.clockOffset;
        out.endNs = k->end - c.clockOffset;
        c.names.assign(k->name, out);
        return Decoded::Record;
      }
      case MSPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const msptiActivityMemcpy*>(record);
        return transfer(*m, RecordKind::Memcpy, intern(copyKindName(m->copyKind)), out, c);
      }
      case MSPTI_ACTIVITY_KIND_MEMSET: {
        static const uint32_t memsetName = intern("memset");
        return transfer(*reinterpret_cast<const msptiActivityMemset*>(record), RecordKind::Memset, memsetName, out, c);
      }
      case MSPTI_ACTIVITY_KIND_MARKER: {
        const auto* m = reinterpret_cast<const msptiActivityMarker*>(record);
        c.counters[kMarkers].fetch_add(1, std::memory_order_relaxed);
        if (m->domain && std::strcmp(m->domain, kMstxDomain) == 0)
          c.counters[kScopeMarkers].fetch_add(1, std::memory_order_relaxed);
        return Decoded::Skip;
      }
      case MSPTI_ACTIVITY_KIND_API:
      case MSPTI_ACTIVITY_KIND_HCCL:
      case MSPTI_ACTIVITY_KIND_MEMORY:
      case MSPTI_ACTIVITY_KIND_COMMUNICATION:
        return Decoded::Skip;  // kinds this backend does not enable
      default:  // ACL_API, NODE_API, RUNTIME_API (newer versions) and kinds not known here
        c.counters[kUnknownKinds].fetch_add(1, std::memory_order_relaxed);
        return Decoded::Skip;
    }
  }

  template <typename Transfer>
  static Decoded transfer(const Transfer& m, RecordKind kind, uint32_t name, DeviceRecord& out, DecodeContext& c) {
    if (m.start == 0 && m.end == 0) {
      c.counters[kUnknownTimes].fetch_add(1, std::memory_order_relaxed);
      return Decoded::Discard;
    }
    out.kind = kind;
    out.correlation = uint32_t(m.correlationId);
    out.deviceId = knownId(m.deviceId);
    out.streamId = knownId(m.streamId);
    out.startNs = m.start - c.clockOffset;
    out.endNs = m.end - c.clockOffset;
    out.bytes = m.bytes;
    out.name = name;
    return Decoded::Record;
  }

  static const char* copyKindName(uint32_t kind) {
    switch (kind) {
      case MSPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
      case MSPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
      case MSPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
      case MSPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
      default: return "memcpy";
    }
  }
};

using MsptiTracer = DialectTracer<MsptiDialect>;
extern template class DialectTracer<MsptiDialect>;

}  // namespace ftp
