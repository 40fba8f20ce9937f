// The shared machinery of CUPTI-dialect backends (CUPTI, MUPTI, MSPTI): API callbacks on the
// launch, copy and set calls (the launch path), activity buffers turned into DeviceRecords (the
// record path), flushing, and dropped-record accounting. One tracer per dialect and process: the
// vendor library allows one subscriber.
//
// The dialect `D` is a traits struct (nvidia/cupti_dialect.h, mthreads/mupti_dialect.h,
// cann/mspti_dialect.h) that supplies the vendor's symbol table (D::Api), its types and result
// codes, the activity kinds to enable, which callback ids are launches, the record decoder
// (vendor layout -> DeviceRecord) and its quirks. Everything on the per-launch and per-record
// paths is a static inline call of D, so each instantiation compiles to what a vendor-specific
// tracer would be, without virtual calls.
//
// The member definitions are in dialect_tracer_impl.h and dialect_tracer_records.h, included
// only by the one .cpp file per dialect that instantiates the template.
#pragma once
#include "core/singleton.h"
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backends/dialect/clock_fit.h"
#include "backends/dialect/dialect_traits.h"
#include "backends/dialect/tracer_observer.h"
#include "core/clock.h"
#include "data/kernel_names.h"
#include "data/records.h"
#include "session/profiler.h"

namespace ftp {

// What a dialect's decoder made of one activity record.
enum class Decoded : uint8_t {
  Record,   // `out` is a kernel, copy or set for the profiler
  Skip,     // a kind the profiler does not report (counted by the dialect if it wants)
  Discard,  // unusable (e.g. zero timestamps); the dialect counted why
};

// Counters a dialect's decoder keeps, named by D::kCounterNames.
constexpr size_t kMaxDialectCounters = 8;
using DialectCounters = std::array<std::atomic<uint64_t>, kMaxDialectCounters>;

// What the decoder needs besides the record.
struct DecodeContext {
  int64_t clockOffset;  // vendor timestamp minus host monotonic time
  KernelNames& names;
  DialectCounters& counters;
  const uint8_t* end;  // one past the buffer's valid bytes: a record must end at or before it
  const ClockFit& fit;  // dialects with D::kClockFit convert through it (clock_fit.h)
};

// Whether a record of `size` bytes at `record` lies within the buffer (decoders check it before
// reading a layout they know only by analogy).
inline bool fitsIn(const void* record, size_t size, const DecodeContext& c) {
  return static_cast<const uint8_t*>(record) + size <= c.end;
}

// One callback id to enable: its domain, id, and whether one call makes several records (graphs).
template <typename Domain, typename CallbackId>
struct TracedCallback {
  Domain domain;
  CallbackId cbid;
  bool multi;
};

// Calls whose correlation ids reach kernels, copies and sets, by name prefix, for dialects that
// name their callback ids (CUPTI, MUPTI): the list holds across library versions, whose
// numeric ids differ. Host-function launches run no device work and are left out.
inline bool tracedCallName(const char* name, const char* const* prefixes, size_t count) {
  if (std::strstr(name, "HostFunc")) return false;
  for (size_t i = 0; i < count; ++i)
    if (std::strncmp(name, prefixes[i], std::strlen(prefixes[i])) == 0) return true;
  return false;
}

template <typename D>
class DialectTracer : public ActivityListener {
 public:
  using Api = typename D::Api;
  using Kind = typename D::Kind;
  using Context = typename D::Context;
  using Traced = TracedCallback<typename D::Domain, typename D::CallbackId>;

  static DialectTracer& instance();

  // Starts tracing on the first call and counts users; throws std::runtime_error with a message
  // naming the problem (e.g. another tool holding the subscriber slot).
  void acquire(const Api& api, size_t bufferBytes, DeviceType deviceType);
#ifdef FLAGTREE_PROFILER_TESTING
  // The benchmark's "floor": the least any profiler on this library costs. Kernel activity
  // only, records discarded; with `emptyCallbacks`, an empty callback on each launch call too.
  // Built for tests and benchmarks only (CMake option FLAGTREE_PROFILER_TESTING).
  void startFloor(const Api& api, size_t bufferBytes, bool emptyCallbacks);
#endif
  // When the last user releases it: a final flush, then either ends tracing, or (dialects with
  // D::kKeepAttached) parks: stays subscribed with its activity kinds enabled (enabling them
  // is most of a session's fixed cost) and the launch callbacks off; records that arrive while
  // parked, or belong to launches made then, are discarded. The next acquire resumes.
  void release();
  // Ends a parked tracer's subscription (unsubscribe + finalize), so that another tool can
  // attach; returns whether it did. No-op (false) while users hold it or when not parked.
  bool detach();
  bool parked() const { return parked_; }
  // No session holds the tracer and one is coming (an armed trigger's window): attaches it now,
  // parked as the last release would have left it, on a thread of ours, so that the session's
  // acquire only resumes it. Whether it did (false: held, already parked, a dialect that never
  // parks, or the library taken by another tool). The idle clock lets go should none come.
  bool parkAhead(const Api& api, size_t bufferBytes, DeviceType deviceType);
  uint64_t parksAhead() const { return parksAhead_.load(); }
  uint64_t lastParkAheadNs() const { return lastParkAheadNs_.load(); }
  // Records discarded because they arrived while parked or came from launches made then.
  uint64_t idleDiscarded() const { return idleDiscarded_.load(); }
  // Fresh subscriptions since the process started (tests: a resume does not subscribe).
  uint64_t subscriptions() const { return subscriptions_.load(); }
  // Where the last fresh start spent its time, ns (most of the first session's fixed cost):
  // subscribe, the launch callbacks (chosen once per library), the dialect's extra callbacks,
  // buffer registration, the activity kinds.
  static constexpr const char* kStartPhases[] = {"subscribe", "api_callbacks", "extra_callbacks", "register",
                                                 "activity_kinds"};
  const std::array<uint64_t, 5>& startPhasesNs() const { return startPhasesNs_; }
  // Quiet: held by sessions none of which is active (all deactivated, a schedule between its
  // windows): the activity kinds and launch callbacks are off, so launches cost the program no
  // callback and no record; they go back on when a session becomes active (dialect_tracer_quiet.h).
  bool quiet() const { return quiet_.load(); }
  uint64_t quietSwitches() const { return quietSwitches_.load(); }
  // The last switch off and back on, ns; kinds the library refused to take back on.
  uint64_t lastQuietNs() const { return lastQuietNs_.load(); }
  uint64_t lastWakeNs() const { return lastWakeNs_.load(); }
  uint64_t wakeRefusals() const { return wakeRefusals_.load(); }
  // Suspended (dialects with kSuspendWhenQuiet): quiet for the idle time set here (seconds; < 0:
  // never), then let go as a stop() lets go (records flushed to their sessions, unsubscribed,
  // finalized) with the sessions still holding it; attached afresh when one becomes active.
  void setSuspendAfter(double seconds) { suspendAfter_.store(seconds); }
  bool suspended() const { return suspended_.load(); }
  uint64_t suspensions() const { return suspensions_.load(); }
  uint64_t lastSuspendNs() const { return lastSuspendNs_.load(); }
  uint64_t lastResumeNs() const { return lastResumeNs_.load(); }
  // Wakes that could not attach again (another tool took the library meanwhile): still suspended.
  uint64_t resumeFailures() const { return resumeFailures_.load(); }
  // A suspended tracer attached again ahead of the wake that a window will bring, on a thread of
  // ours rather than the program's: subscribed and registered, its launch callbacks and kinds
  // still off (quiet), so that the wake only switches those on. Whether it attached (false: not
  // suspended, or the library taken meanwhile: the wake tries again).
  bool attachAhead();
  uint64_t attachesAhead() const { return attachesAhead_.load(); }
  // The idle clock ran out: detaches a parked tracer, suspends a quiet one; whether it did.
  bool idleRelease();
  void onTracerDemand(TracerDemand demand) override;
  // Waits for queued device work and delivers every buffered record.
  void flush();
  bool running() const { return users_ > 0; }
  uint64_t droppedRecords() const { return dropped_.load(); }
  // Most bytes of activity buffers handed to the library and not yet returned (0: no limit).
  // A request past it is declined, and the library drops (and counts) what it cannot store.
  void setBufferLimit(size_t bytes) { bufferLimit_.store(bytes); }
  uint64_t declinedBuffers() const { return declined_.load(); }
  uint32_t libraryVersion() const { return version_; }
  const std::string& libraryPath() const { return api_.path; }
  // The loaded library's table and dlopen handle, for features that resolve more of its calls.
  const Api& api() const { return api_; }
  void* handle() const { return api_.handle; }
  // The dialect's own counts since the process started (D::kCounterNames[index]).
  uint64_t counter(size_t index) const { return counters_[index].load(); }
  // How many callback ids the launch path enabled (0 before the first start).
  size_t tracedCallbacks() const { return traced_.size(); }
  // The library's answer when it refused the launch callbacks at the last start (MSPTI without
  // LD_PRELOAD answers MSPTI_ERROR_WITHOUT_LD_PRELOAD), D::kSuccess when it took them.
  typename D::Result callbackRefusal() const { return callbackRefusal_; }
  // Activity kinds the library refused at the last start (optional kinds only; see enableKinds).
  const std::vector<Kind>& refusedKinds() const { return refusedKinds_; }
  // Buffers handed back after the stop's flush, not read (D::kFlushOnceAtStop: MUSA 4.3 can
  // corrupt a buffer it retains through teardown).
  uint64_t buffersAfterTeardown() const { return afterTeardown_.load(); }
  // Observers get the launch (and, where the dialect has them, module and context) callbacks
  // (see tracer_observer.h). They may be added before or while tracing; the caller keeps them
  // alive until removed.
  void addObserver(TracerObserver* observer);
  void removeObserver(TracerObserver* observer);
  bool hasObservers() const { return hasObservers_.load(std::memory_order_acquire); }
  template <typename F>
  void notifyObservers(F&& f);

 private:
  friend DialectTracer& leaked<DialectTracer>();
  DialectTracer() = default;
  // Subscribes and registers; with `collect`, the launch callbacks and activity kinds go on too.
  void start(bool collect = true);
  void enableKinds();
  int64_t measureClockOffset();
  bool sampleClock(uint64_t& vendor, uint64_t& host, uint64_t& width);
  void stop();
  void park();
  void resume();
  void setApiCallbacks(uint32_t enable);
  void settle();  // quiet or not, as the sessions' state says (dialect_tracer_quiet.h)
  void goQuiet();
  void wake();
  void armSuspend();  // the idle clock, while quiet and attached (dialect_tracer_quiet.h)
  void suspend();
  void reattach();
  bool keepRecord(uint32_t correlation);
  void flushLocked();
  void drain(bool final);  // D::kUnsubscribeBeforeFlush
  void collectDropped();
  void enableApiCallbacks();
  void chooseApiCallbacks();  // traced_ for the library, worked out once per library
  void handleBuffer(uint8_t* buffer, size_t validSize);
  void bufferDone(Context context, uint32_t streamId, uint8_t* buffer, size_t size, size_t validSize);
  void noteContext(Context context);
  // Unsubscribes and throws "cannot <what> <library>: <result>".
  [[noreturn]] void failStart(const std::string& what, typename D::Result rc);

  static void onApi(void* userdata, typename D::Domain domain, typename D::CallbackId cbid,
                    typename D::Payload data);
  static void onBufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords);
  // CUPTI and MUPTI hand the buffer back with its context and stream; MSPTI without.
  static void onBufferCompletedIn(Context context, uint32_t streamId, uint8_t* buffer, size_t size,
                                  size_t validSize);
  static void onBufferCompleted(uint8_t* buffer, size_t size, size_t validSize);

  // Splits a start into startPhasesNs_'s steps: end(i) charges the time since the last end to i.
  struct PhaseClock {
    std::array<uint64_t, 5>& out;
    uint64_t mark = monotonicNs();
    explicit PhaseClock(std::array<uint64_t, 5>& phases) : out(phases) {}
    void end(size_t index) {
      const uint64_t now = monotonicNs();
      out[index] = now - mark;
      mark = now;
    }
  };

  std::mutex mutex_;  // start/stop/flush
  int users_ = 0;
  Api api_;
  DeviceType deviceType_ = D::kDeviceType;
#ifdef FLAGTREE_PROFILER_TESTING
  bool floor_ = false;  // see startFloor
#else
  static constexpr bool floor_ = false;  // no floor in this build: the checks of it fold away
#endif
  size_t bufferBytes_ = 8 << 20;
  std::atomic<size_t> bufferLimit_{0};
  std::atomic<size_t> held_{0};  // bytes of buffers the library holds
  std::atomic<uint64_t> declined_{0};
  typename D::Subscriber subscriber_{};
  uint32_t version_ = 0;
  int64_t clockOffset_ = 0;  // vendor timestamp minus host monotonic time
  ClockFit clockFit_;
  std::atomic<uint64_t> dropped_{0};
  bool parked_ = false;  // see release()
  std::atomic<bool> quiet_{false};  // see quiet(); kept through a park, undone by the resume's settle()
  std::atomic<bool> listening_{false};  // registered as the profiler's activity listener
  // Raised each time the launch callbacks go off (see ThreadState::apiEpoch).
  std::atomic<uint32_t> callbackEpoch_{0};
  std::atomic<uint64_t> quietSwitches_{0}, lastQuietNs_{0}, lastWakeNs_{0}, wakeRefusals_{0};
  std::atomic<bool> suspended_{false};  // see suspended(); changed under mutex_
  std::atomic<double> suspendAfter_{-1.0};
  std::atomic<uint64_t> suspensions_{0}, lastSuspendNs_{0}, lastResumeNs_{0}, resumeFailures_{0};
  std::atomic<uint64_t> attachesAhead_{0}, parksAhead_{0}, lastParkAheadNs_{0};
  typename D::Result callbackRefusal_ = D::kSuccess;
  std::vector<Kind> refusedKinds_;
  // Whether a launch was made since the last forced flush (D::kFlushOnceAtStop: a forced flush
  // with nothing new to deliver can block in MUSA 4.3's MUPTI, so it is not made).
  std::atomic<bool> launchedSinceFlush_{false};
  std::atomic<bool> tornDown_{false};  // between the stop's flush and the next start
  std::atomic<uint64_t> afterTeardown_{0};
  std::array<uint64_t, 5> startPhasesNs_{};
  // Records with a smaller correlation id are discarded: kMaxCorrelation while parked (and after
  // a resume until the first traced launch, whose id it then takes), 0 after a fresh start.
  static constexpr uint32_t kMaxCorrelation = 0xffffffffu;
  std::atomic<uint32_t> keepFrom_{0};
  std::atomic<uint64_t> idleDiscarded_{0};
  std::atomic<uint64_t> subscriptions_{0};
  DialectCounters counters_{};
  // Per launch domain: which callback ids are graph launches (several records share one id).
  std::vector<uint8_t> multiDriver_, multiRuntime_;
  std::vector<Traced> traced_;  // ids to enable
  std::string tracedFor_;       // the library traced_ was worked out for
  std::mutex contextsMutex_;
  std::vector<Context> contexts_;
  KernelNames kernelNames_;
  std::mutex observersMutex_;
  std::vector<TracerObserver*> observers_;
  std::atomic<bool> hasObservers_{false};  // checked on every launch before taking the lock
};

}  // namespace ftp
