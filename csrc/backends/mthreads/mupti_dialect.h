// The MUPTI (Moore Threads) dialect of the shared activity tracer. MUPTI mirrors CUPTI, so
// this is CUPTI's dialect with MUPTI's table and types, plus the documented MUSA 4.3 hazards:
// - activity records may carry zero timestamps: they are discarded and counted;
// - a non-forced flush can spin: every flush is forced (as the shared tracer does anyway);
// - the library can double-free when torn down: it is never dlclosed, and never finalized
//   (stop only unsubscribes, which frees the subscriber slot for the next session or tool).
#pragma once
#include <array>
#include <string>
#include <vector>

#include "backends/dialect/dialect_tracer.h"
#include "backends/mthreads/mupti_api.h"
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
  enum Counter : size_t { kZeroTimestamps = 0 };
  static constexpr std::array<const char*, 1> kCounterNames = {"zero_timestamp_records"};
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
  static void onOtherCallback(DialectTracer<MuptiDialect>&, Domain, CallbackId, Payload) {}

  // Setup.
  static void selectCallbacks(const Api& api, std::vector<TracedCallback<Domain, CallbackId>>& out);
  static void enableExtraCallbacks(const Api&, Subscriber) {}
  static void onStart(const Api& api) {
    if (api.enableLaunchAttributes) api.enableLaunchAttributes(1);  // grid/block in kernel records
  }
  static void synchronize(const std::vector<Context>& contexts);

  // Record path.
  static Decoded decode(const Record* record, DeviceRecord& out, DecodeContext& c) {
    switch (record->kind) {
      case MUPTI_ACTIVITY_KIND_KERNEL:
      case MUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const MUpti_ActivityKernel6*>(record);
        if (zeroTime(k->start, k->end, c)) return Decoded::Discard;
        out.kind = RecordKind::Kernel;
        out.correlation = k->correlationId;
        out.deviceId = k->deviceId;
        out.streamId = k->streamId;
        out.startNs = k->start - c.clockOffset;
        out.endNs = k->end - c.clockOffset;
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
        return transfer(*m, RecordKind::Memcpy, intern(copyKindName(m->copyKind)), out, c);
      }
      case MUPTI_ACTIVITY_KIND_MEMSET: {
        static const uint32_t memsetName = intern("memset");
        return transfer(*reinterpret_cast<const MUpti_ActivityMemset3*>(record), RecordKind::Memset, memsetName, out, c);
      }
      default:
        return Decoded::Skip;
    }
  }

  static bool zeroTime(uint64_t start, uint64_t end, DecodeContext& c) {
    if (start != 0 && end != 0) return false;
    c.counters[kZeroTimestamps].fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  template <typename Transfer>
  static Decoded transfer(const Transfer& m, RecordKind kind, uint32_t name, DeviceRecord& out, DecodeContext& c) {
    if (zeroTime(m.start, m.end, c)) return Decoded::Discard;
    out.kind = kind;
    out.correlation = m.correlationId;
    out.deviceId = m.deviceId;
    out.streamId = m.streamId;
    out.startNs = m.start - c.clockOffset;
    out.endNs = m.end - c.clockOffset;
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
