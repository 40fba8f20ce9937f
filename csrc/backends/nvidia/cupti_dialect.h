// The CUPTI (NVIDIA) dialect of the shared activity tracer: CUPTI's table (cupti_api.h),
// types, the kinds and callbacks it traces, its record layouts, and its resource callbacks
// (modules, contexts, graph nodes) that PC sampling, counters and graphs need.
#pragma once
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "backends/dialect/dialect_tracer.h"
#include "backends/nvidia/cupti_api.h"
#include "core/strings.h"

namespace ftp {

struct CuptiDialect {
  using Api = CuptiApi;
  using Result = CUptiResult;
  using Kind = CUpti_ActivityKind;
  using Domain = CUpti_CallbackDomain;
  using CallbackId = CUpti_CallbackId;
  using Subscriber = CUpti_SubscriberHandle;
  using Context = CUcontext;
  using Record = CUpti_Activity;
  using Payload = const void*;  // CUpti_CallbackData, or CUpti_ResourceData in the resource domain
  using CallbackData = CUpti_CallbackData;

  static constexpr const char* kName = "CUPTI";
  static constexpr DeviceType kDeviceType = DeviceType::CUDA;
  static constexpr Result kSuccess = CUPTI_SUCCESS;
  static constexpr Kind kKernelKind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  static constexpr std::array<Kind, 3> kActivityKinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};
  static constexpr Domain kDriverDomain = CUPTI_CB_DOMAIN_DRIVER_API;
  static constexpr uint32_t kFlushForced = CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;
  static constexpr bool kCompleteHasContext = true;
  static constexpr bool kFinalizeAtStop = true;
  static constexpr bool kKeepAttached = true;  // see DialectTracer::release
  static constexpr bool kQuietWhenIdle = true;  // see DialectTracer::quiet
  // A quiet CUPTI still costs launches until cuptiFinalize: let go after the idle clock
  // (idle_release.h), attached again at wake (DialectTracer::suspended).
  static constexpr bool kSuspendWhenQuiet = true;
  static void armSuspend(double seconds);
  static void cancelSuspend();
  static constexpr std::array<const char*, 0> kCounterNames = {};
  // Dialect switches of the shared tracer (MSPTI and MUPTI set some; see their dialects).
  static constexpr bool kExternalCorrelation = false;  // launches keyed on ids of our own
  static constexpr bool kRealtimeClock = false;        // records on CLOCK_REALTIME, no timestamp call
  static constexpr bool kFlushOnceAtStop = false;      // never a second forced flush in a row
  static constexpr bool kUnsubscribeBeforeFlush = false;
  static uint32_t launchEnter() { return 0; }
  static void launchExit() {}
  static bool joinRecord(DeviceRecord&) { return true; }
  template <typename F>
  static void finishRecords(F&&, bool, uint64_t) {}
  static Context currentContext() { return nullptr; }

  static bool kindRequired(Kind) { return true; }
  static bool isSubscriberConflict(Result rc) { return rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; }
  static std::string conflictMessage(const std::string& path, const std::string&) {
    return "another CUPTI client already holds the profiling slot (torch.profiler, Nsight Systems, "
           "Triton's proton, a second copy of libcupti, or a tool that stopped without "
           "cuptiFinalize); stop it before starting this session. Library: " + path;
  }

  // Launch path.
  static bool isLaunchDomain(Domain d) { return d != CUPTI_CB_DOMAIN_RESOURCE; }
  static const CallbackData* callbackData(Payload p) { return static_cast<const CallbackData*>(p); }
  static bool isExit(const CallbackData* cb) { return cb->callbackSite == CUPTI_API_EXIT; }
  static uint32_t correlation(const CallbackData* cb) { return cb->correlationId; }
  static Context context(const CallbackData* cb) { return cb->context; }
  static void onOtherCallback(DialectTracer<CuptiDialect>& tracer, Domain, CallbackId cbid, Payload data);

  // Setup.
  static void selectCallbacks(const Api& api, std::vector<TracedCallback<Domain, CallbackId>>& out);
  static void enableExtraCallbacks(const Api& api, Subscriber subscriber);
  static void onStart(const Api&) {}
  static void synchronize(const std::vector<Context>& contexts);

  // Record path.
  static Decoded decode(const Record* record, DeviceRecord& out, DecodeContext& c) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        decodeKernel(record, out, c);
        return Decoded::Record;
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        // Memcpy5: its fields are at the same offsets in Memcpy6 and 7 (CUPTI 13 headers).
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy5*>(record);
        decodeTransfer(*m, RecordKind::Memcpy, intern(copyKindName(m->copyKind)), out, c);
        return Decoded::Record;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        static const uint32_t memsetName = intern("memset");
        decodeTransfer(*reinterpret_cast<const CUpti_ActivityMemset4*>(record), RecordKind::Memset, memsetName, out, c);
        return Decoded::Record;
      }
      default:
        return Decoded::Skip;
    }
  }

  // CUPTI's clock (CLOCK_REALTIME ns on Linux) to the host monotonic one. A stamp below the
  // offset would land before the host booted: it is not on CUPTI's clock (0, "not collected",
  // or another clock, as kernel-replay records of the counters route are), so only the
  // duration is kept and the record is marked to be placed at its launch.
  static void convertTimes(uint64_t start, uint64_t end, DeviceRecord& out, const DecodeContext& c) {
    if (start == 0 || int64_t(start) < c.clockOffset) {
      out.offClock = true;
      out.startNs = 0;
      out.endNs = end > start ? end - start : 0;
      return;
    }
    out.startNs = start - c.clockOffset;
    out.endNs = end - c.clockOffset;
  }

  static void decodeKernel(const Record* record, DeviceRecord& out, DecodeContext& c) {
    // The Kernel9 layout: its leading fields are the same in every later record version the
    // library may write (checked against CUPTI 12 and 13 headers).
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel9*>(record);
    out.kind = RecordKind::Kernel;
    out.correlation = k->correlationId;
    out.deviceId = k->deviceId;
    out.streamId = k->streamId;
    convertTimes(k->start, k->end, out, c);
    out.grid[0] = k->gridX, out.grid[1] = k->gridY, out.grid[2] = k->gridZ;
    out.block[0] = k->blockX, out.block[1] = k->blockY, out.block[2] = k->blockZ;
    out.registers = k->registersPerThread;
    out.staticSharedMemory = k->staticSharedMemory;
    out.dynamicSharedMemory = k->dynamicSharedMemory;
    out.graphNodeId = k->graphNodeId;  // same offset in Kernel9..10 (checked against CUPTI 12, 13)
    c.names.assign(k->name, out);
  }

  template <typename Transfer>
  static void decodeTransfer(const Transfer& m, RecordKind kind, uint32_t name, DeviceRecord& out, DecodeContext& c) {
    out.kind = kind;
    out.correlation = m.correlationId;
    out.deviceId = m.deviceId;
    out.streamId = m.streamId;
    convertTimes(m.start, m.end, out, c);
    out.bytes = m.bytes;
    out.graphNodeId = m.graphNodeId;
    out.name = name;
  }

  static const char* copyKindName(uint8_t kind) {
    switch (kind) {
      case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
      case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
      case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
      case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
      case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
      default: return "memcpy";
    }
  }
};

}  // namespace ftp
