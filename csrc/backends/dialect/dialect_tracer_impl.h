// DialectTracer: start, stop, flush and the choice of traced callbacks (see dialect_tracer.h).
// Included by the .cpp file that instantiates the tracer for one dialect, never by others.
#pragma once
#include "core/errors.h"
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "backends/dialect/dialect_tracer.h"
#include "backends/dialect/dialect_tracer_quiet.h"
#include "backends/dialect/dialect_tracer_records.h"
#include "core/clock.h"

namespace ftp {

template <typename D>
DialectTracer<D>& DialectTracer<D>::instance() {
  return leaked<DialectTracer>();
}

template <typename D>
void DialectTracer<D>::acquire(const Api& api, size_t bufferBytes, DeviceType deviceType) {
  // Outside mutex_: the profiler tells its listeners under its own lock, and this one then
  // takes mutex_ (onTracerDemand).
  if (!listening_.exchange(true)) Profiler::instance().addActivityListener(this);
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ > 0) {
    ++users_;
    settle();
    armSuspend();  // still quiet: the clock (stopped by the caller before a start) runs again
    return;
  }
  if (parked_ && api.path == api_.path && bufferBytes == bufferBytes_ && deviceType == deviceType_) {
    resume();
    users_ = 1;
    settle();
    armSuspend();
    return;
  }
  if (parked_) stop();  // another library or buffer size: attach afresh
  api_ = api;
  bufferBytes_ = bufferBytes;
  deviceType_ = deviceType;
  start();
  users_ = 1;
  settle();
}

#ifdef FLAGTREE_PROFILER_TESTING
template <typename D>
void DialectTracer<D>::startFloor(const Api& api, size_t bufferBytes, bool emptyCallbacks) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ > 0)
    throw std::runtime_error(std::string("the ") + D::kName + " floor needs the tracer to itself; finalize sessions first");
  if (parked_) stop();
  api_ = api;
  bufferBytes_ = bufferBytes;
  floor_ = true;
  // Timed like start(), so that the benchmark can compare the two without cuptiSubscribe, whose
  // cost moves between processes by more than the difference it looks for.
  startPhasesNs_ = {};
  PhaseClock phase(startPhasesNs_);
  typename D::Result rc = api_.subscribe(&subscriber_, &DialectTracer::onApi, this);
  phase.end(0);
  if (rc != D::kSuccess) {
    floor_ = false;
    throw std::runtime_error("cannot subscribe to " + api_.path + ": " + api_.describe(rc));
  }
  if (emptyCallbacks) enableApiCallbacks();
  phase.end(1);
  if constexpr (D::kCompleteHasContext)
    api_.registerCallbacks(&DialectTracer::onBufferRequested, &DialectTracer::onBufferCompletedIn);
  else
    api_.registerCallbacks(&DialectTracer::onBufferRequested, &DialectTracer::onBufferCompleted);
  phase.end(3);
  api_.enable(D::kKernelKind);
  phase.end(4);
  users_ = 1;
}
#endif

template <typename D>
void DialectTracer<D>::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ == 0) return;
  if (--users_ > 0) return;
  if (suspended_.load()) {  // let go at the suspend: nothing to flush, nothing to stop again
    suspended_.store(false);
    quiet_.store(false);
    return;
  }
  if (D::kKeepAttached && !floor_) park();
  else stop();
}

template <typename D>
bool DialectTracer<D>::detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ > 0 || !parked_) return false;
  stop();
  return true;
}

template <typename D>
void DialectTracer<D>::park() {
  flushLocked();  // the last session's records, delivered before anything is discarded
  keepFrom_.store(kMaxCorrelation);
  // Launches while idle cost the application one callback-less API call, not ours.
  setApiCallbacks(0);
  parked_ = true;
}

template <typename D>
bool DialectTracer<D>::parkAhead(const Api& api, size_t bufferBytes, DeviceType deviceType) {
  if constexpr (D::kKeepAttached) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (users_ > 0 || parked_ || floor_) return false;
    const uint64_t began = monotonicNs();
    api_ = api;
    bufferBytes_ = bufferBytes;
    deviceType_ = deviceType;
    try {
      start(false);
      chooseApiCallbacks();  // chosen, left off: the resume switches them on
      keepFrom_.store(kMaxCorrelation);  // before the kinds: what they record now is no session's
      enableKinds();
    } catch (const std::exception&) {
      return false;  // another tool holds the library: the session attaches as usual, or says why
    }
    parked_ = true;
    parksAhead_.fetch_add(1);
    lastParkAheadNs_.store(monotonicNs() - began);
    return true;
  }
  return false;
}

template <typename D>
void DialectTracer<D>::resume() {
  // What the library buffered while parked goes (discarded) before the session starts; so do
  // its drop counts, which belong to no session.
  api_.flushAll(D::kFlushForced);
  size_t dropped = 0;
  if (api_.getNumDropped) api_.getNumDropped(nullptr, 0, &dropped);
  parked_ = false;
  if (!quiet_.load()) setApiCallbacks(1);  // else settle() turns kinds and callbacks on, or leaves them off
}

template <typename D>
void DialectTracer<D>::setApiCallbacks(uint32_t enable) {
  if (!enable) callbackEpoch_.fetch_add(1);  // exits of launches entered before are not coming
  typename D::Result refusal = D::kSuccess;
  for (const Traced& t : traced_) {
    const typename D::Result rc = api_.enableCallback(enable, subscriber_, t.domain, t.cbid);
    if (rc != D::kSuccess && refusal == D::kSuccess) refusal = rc;
  }
  if (enable) callbackRefusal_ = refusal;
}

template <typename D>
bool DialectTracer<D>::keepRecord(uint32_t correlation) {
  if (correlation >= keepFrom_.load(std::memory_order_relaxed)) return true;
  idleDiscarded_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

template <typename D>
void DialectTracer<D>::failStart(const std::string& what, typename D::Result rc) {
  api_.unsubscribe(subscriber_);
  subscriber_ = {};
  throw std::runtime_error("cannot " + what + " " + api_.path + ": " + api_.describe(rc));
}

template <typename D>
void DialectTracer<D>::start(bool collect) {
  PhaseClock phase(startPhasesNs_);
  typename D::Result rc = api_.subscribe(&subscriber_, &DialectTracer::onApi, this);
  phase.end(0);
  if (D::isSubscriberConflict(rc)) throw SubscriberTaken(D::conflictMessage(api_.path, api_.describe(rc)));
  if (rc != D::kSuccess) throw std::runtime_error("cannot subscribe to " + api_.path + ": " + api_.describe(rc));
  subscriptions_.fetch_add(1);
  keepFrom_.store(0);
  if (api_.getVersion) api_.getVersion(&version_);
  if (collect) enableApiCallbacks();
  phase.end(1);
  D::enableExtraCallbacks(api_, subscriber_);
  phase.end(2);
  if constexpr (D::kCompleteHasContext)
    rc = api_.registerCallbacks(&DialectTracer::onBufferRequested, &DialectTracer::onBufferCompletedIn);
  else
    rc = api_.registerCallbacks(&DialectTracer::onBufferRequested, &DialectTracer::onBufferCompleted);
  if (rc != D::kSuccess) failStart("register activity buffers with", rc);
  phase.end(3);
  clockOffset_ = measureClockOffset();
  tornDown_.store(false);
  launchedSinceFlush_.store(false);
  D::onStart(api_);
  if (collect) enableKinds();
  phase.end(4);
}

template <typename D>
bool DialectTracer<D>::sampleClock(uint64_t& vendor, uint64_t& host, uint64_t& width) {
  // The vendor clock read between two monotonic reads, taken against their midpoint. MSPTI has
  // no timestamp call: its records are CLOCK_REALTIME ns (D::kRealtimeClock).
  const uint64_t before = monotonicNs();
  bool known = false;
  if constexpr (D::kRealtimeClock) {
    vendor = realtimeNs();
    known = true;
  } else {
    known = api_.getTimestamp && api_.getTimestamp(&vendor) == D::kSuccess;
  }
  const uint64_t after = monotonicNs();
  host = before + (after - before) / 2;
  width = after - before;
  return known;
}

template <typename D>
int64_t DialectTracer<D>::measureClockOffset() {
  // Vendor timestamp minus host monotonic time; without a vendor clock, the host's.
  uint64_t vendor = 0, host = 0, width = 0;
  if (!sampleClock(vendor, host, width)) return 0;
  clockFit_.first(vendor, host, width);
  return int64_t(vendor) - int64_t(host);
}

template <typename D>
void DialectTracer<D>::enableKinds() {
  refusedKinds_.clear();
  for (size_t i = 0; i < D::kActivityKinds.size(); ++i) {
    const Kind kind = D::kActivityKinds[i];
    typename D::Result rc = api_.enable(kind);
    if (rc != D::kSuccess && !D::kindRequired(kind)) refusedKinds_.push_back(kind);
    if (rc == D::kSuccess || !D::kindRequired(kind)) continue;
    for (size_t j = 0; j < i; ++j) api_.disable(D::kActivityKinds[j]);
    failStart("enable activity kind " + std::to_string(int(kind)) + " in", rc);
  }
}

template <typename D>
void DialectTracer<D>::enableApiCallbacks() {
  chooseApiCallbacks();
  setApiCallbacks(1);
}

template <typename D>
void DialectTracer<D>::chooseApiCallbacks() {
  // Which ids to trace depends only on the library, so it is worked out once per library
  // (for CUPTI a few thousand name look-ups) and reused by every later session.
  if (tracedFor_ != api_.path) {
    traced_.clear();
    D::selectCallbacks(api_, traced_);
    multiDriver_.clear();
    multiRuntime_.clear();
    for (const Traced& t : traced_) {
      auto& multi = t.domain == D::kDriverDomain ? multiDriver_ : multiRuntime_;
      if (multi.size() <= size_t(t.cbid)) multi.resize(size_t(t.cbid) + 1, 0);
      multi[t.cbid] = t.multi;
    }
    tracedFor_ = api_.path;
  }
}

template <typename D>
void DialectTracer<D>::stop() {
  if constexpr (D::kUnsubscribeBeforeFlush) {
    drain(true);  // disabling a kind first would stop its parser and lose its last records
    for (Kind kind : D::kActivityKinds) api_.disable(kind);
  } else {
    flushLocked();
    if constexpr (D::kFlushOnceAtStop) tornDown_.store(true);  // buffers handed back from here on go unread
    for (Kind kind : D::kActivityKinds) api_.disable(kind);
    // One flush at stop for MUPTI: a second forced flush can wait forever in MUSA 4.3.
    if constexpr (!D::kFlushOnceAtStop) api_.flushAll(D::kFlushForced);
    collectDropped();
    api_.unsubscribe(subscriber_);
    subscriber_ = {};
  }
  // Finalizing releases the library fully, so that another tool (or a later session) can
  // attach; dialects whose library misbehaves when finalized only unsubscribe.
  if (D::kFinalizeAtStop && api_.finalize) api_.finalize();
#ifdef FLAGTREE_PROFILER_TESTING
  floor_ = false;
#endif
  parked_ = false;
  quiet_.store(false);
  keepFrom_.store(0);
  std::lock_guard<std::mutex> lock(contextsMutex_);
  contexts_.clear();
}

template <typename D>
void DialectTracer<D>::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ > 0 && !suspended_.load()) flushLocked();  // suspended: delivered at the suspend
}

template <typename D>
void DialectTracer<D>::drain(bool final) {
  // MSPTI reports device records on its own threads every few tens of milliseconds, whether
  // subscribed or not, and unsubscribing stops profiling (launches until a new subscription get
  // no records): so a flush while sessions go on stays subscribed, waits for the device and one
  // report period (D::kReportWaitMs, as Huawei's own monitor waits between unsubscribing and
  // flushing), then flushes. The stop does the same around its unsubscribe. Records still
  // without a launch are then joined or given up (backends/cann/external_join.h).
  const uint64_t began = monotonicNs();
  D::synchronize({});
  if (final) {
    api_.unsubscribe(subscriber_);
    subscriber_ = {};
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ReportWaitMs<D>::value));
  api_.flushAll(D::kFlushForced);
  collectDropped();
  D::finishRecords([](const DeviceRecord& r) { Profiler::instance().onRecord(r); }, final, began);
}

template <typename D>
void DialectTracer<D>::flushLocked() {
  if constexpr (D::kUnsubscribeBeforeFlush) {
    drain(false);
    return;
  }
  std::vector<Context> contexts;
  {
    std::lock_guard<std::mutex> lock(contextsMutex_);
    contexts = contexts_;
  }
  D::synchronize(contexts);
  if constexpr (FitsClock<D>::value) {  // the line's second point, before this flush's records are read
    uint64_t vendor = 0, host = 0, width = 0;
    if (sampleClock(vendor, host, width)) clockFit_.second(vendor, host, width);
  }
  // MUPTI: a forced flush with nothing launched since the last one is not made (it can block in
  // MUSA 4.3); the last one delivered everything, the device having been waited for first.
  const bool launched = launchedSinceFlush_.exchange(false);
  if (!D::kFlushOnceAtStop || launched) api_.flushAll(D::kFlushForced);
  collectDropped();
}

template <typename D>
void DialectTracer<D>::collectDropped() {
  // Records dropped while no buffer completed (every request declined) are only seen here:
  // the global queue's count (context NULL) since the last read.
  size_t dropped = 0;
  if (api_.getNumDropped && api_.getNumDropped(nullptr, 0, &dropped) == D::kSuccess) dropped_.fetch_add(dropped);
}

template <typename D>
void DialectTracer<D>::noteContext(Context context) {
  // The thread's last context, valid for one start (stop forgets the contexts).
  static thread_local Context last{};
  static thread_local uint32_t lastStart = 0;
  if (!context) context = D::currentContext();  // a callback may leave its context unset
  const uint32_t start = subscriptions_.load(std::memory_order_relaxed);
  if (!context || (context == last && start == lastStart)) return;
  last = context;
  lastStart = start;
  std::lock_guard<std::mutex> lock(contextsMutex_);
  for (Context c : contexts_)
    if (c == context) return;
  contexts_.push_back(context);
}

template <typename D>
void DialectTracer<D>::addObserver(TracerObserver* observer) {
  std::lock_guard<std::mutex> lock(observersMutex_);
  if (std::find(observers_.begin(), observers_.end(), observer) != observers_.end()) return;
  observers_.push_back(observer);
  hasObservers_.store(true, std::memory_order_release);
}

template <typename D>
void DialectTracer<D>::removeObserver(TracerObserver* observer) {
  std::lock_guard<std::mutex> lock(observersMutex_);
  observers_.erase(std::remove(observers_.begin(), observers_.end(), observer), observers_.end());
  hasObservers_.store(!observers_.empty(), std::memory_order_release);
}

template <typename D>
template <typename F>
void DialectTracer<D>::notifyObservers(F&& f) {
  std::lock_guard<std::mutex> lock(observersMutex_);
  for (TracerObserver* o : observers_) f(*o);
}

}  // namespace ftp
