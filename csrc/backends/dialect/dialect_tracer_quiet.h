// DialectTracer: quiet while held by sessions none of which is active (see dialect_tracer.h).
// A deactivated session, or a schedule between its windows, would otherwise have every launch
// pay the library's callback and its activity record for nothing. The profiler says when
// (TracerDemand, session/profiler.h); while a session closes or after the last one, the state
// is kept: a finalize of an active session parks with collection on, as before.
//
// Off: the launch callbacks first (a launch from then on is not ours), then the device is waited
// for, then the activity kinds go off. Every kernel launched before has then ended, so its record
// is in the library's buffers, which a disable does not drop: the next flush delivers it, to the
// sessions that saw its launch. On: the kinds first, then the callbacks, so that a launch the
// profiler sees always has a record coming (one made between the two has a record and no launch:
// counted under ROOT as unattributed, never lost).
//
// Suspended (D::kSuspendWhenQuiet: CUPTI, whose launches cost the program as much while quiet as
// while collecting, until cuptiFinalize): quiet for the dialect's idle time, the tracer is let go
// by stop()'s sequence (the last records flushed to their sessions first) while the sessions keep
// holding it; no library call is made until a wake attaches it again as a start does. Records
// being all delivered before the finalize, nothing keyed by correlation id outlives it but graph
// launches, forgotten then: the library may count its ids afresh. A schedule that knows when its
// window comes has the tracer attached again shortly before, quiet, on the idle clock's thread
// (attachAhead): the wake then only switches kinds and callbacks on. Included through
// dialect_tracer_impl.h only.
#pragma once
#include <algorithm>
#include <exception>
#include <vector>

#include "backends/dialect/dialect_tracer.h"
#include "backends/dialect/dialect_traits.h"
#include "core/clock.h"

namespace ftp {

template <typename D>
void DialectTracer<D>::onTracerDemand(TracerDemand) {
  std::lock_guard<std::mutex> lock(mutex_);
  settle();
}

template <typename D>
void DialectTracer<D>::settle() {
  // Parked or stopped tracers follow release()'s rules; the floor has no sessions. Observers
  // (PC sampling, counters) keep their callbacks: they pair a launch's enter with its exit.
  if (!QuietWhenIdle<D>::value || users_ == 0 || parked_ || floor_) return;
  const TracerDemand demand = Profiler::instance().tracerDemand();
  if (demand == TracerDemand::Either) return;
  const bool quiet = demand == TracerDemand::Off && !hasObservers();
  if (quiet == quiet_.load()) return;
  if (quiet) goQuiet();
  else wake();
}

template <typename D>
void DialectTracer<D>::goQuiet() {
  const uint64_t began = monotonicNs();
  setApiCallbacks(0);
  std::vector<Context> contexts;
  {
    std::lock_guard<std::mutex> lock(contextsMutex_);
    contexts = contexts_;
  }
  D::synchronize(contexts);
  for (Kind kind : D::kActivityKinds)
    if (std::find(refusedKinds_.begin(), refusedKinds_.end(), kind) == refusedKinds_.end()) api_.disable(kind);
  quiet_.store(true);
  quietSwitches_.fetch_add(1);
  lastQuietNs_.store(monotonicNs() - began);
  armSuspend();
}

template <typename D>
void DialectTracer<D>::wake() {
  if constexpr (SuspendsWhenQuiet<D>::value) {
    D::cancelSuspend();
    if (suspended_.load()) {
      reattach();
      return;
    }
  }
  const uint64_t began = monotonicNs();
  for (Kind kind : D::kActivityKinds) {
    if (std::find(refusedKinds_.begin(), refusedKinds_.end(), kind) != refusedKinds_.end()) continue;
    if (api_.enable(kind) != D::kSuccess) wakeRefusals_.fetch_add(1);
  }
  setApiCallbacks(1);
  quiet_.store(false);
  lastWakeNs_.store(monotonicNs() - began);
}

template <typename D>
bool DialectTracer<D>::attachAhead() {
  if constexpr (SuspendsWhenQuiet<D>::value) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The launch callbacks and kinds stay off: records of launches made before the window, with
    // no session active, would come with no launch seen (callbacks off before kinds off) and be
    // counted in the window as launches nobody saw. The wake switches them on, kinds first.
    if (!suspended_.load() || users_ == 0 || parked_ || floor_ || hasObservers()) return false;
    const uint64_t began = monotonicNs();
    try {
      start(false);
    } catch (const std::exception&) {
      return false;  // another tool took the library: the wake tries again, and warns if it fails
    }
    suspended_.store(false);
    attachesAhead_.fetch_add(1);
    lastResumeNs_.store(monotonicNs() - began);
    armSuspend();  // quiet and attached: let go again after the idle time should no window come
    return true;
  }
  return false;
}

template <typename D>
void DialectTracer<D>::armSuspend() {
  if constexpr (SuspendsWhenQuiet<D>::value) {
    const double after = suspendAfter_.load();
    if (after >= 0 && quiet_.load() && !suspended_.load() && users_ > 0 && !parked_) D::armSuspend(after);
  }
}

template <typename D>
bool DialectTracer<D>::idleRelease() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ == 0) {
    if (!parked_) return false;
    stop();
    return true;
  }
  if constexpr (SuspendsWhenQuiet<D>::value) {
    // Refused when a wake came first (the clock fired as it was cancelled), or when observers
    // (PC sampling, counters) hold the library.
    if (quiet_.load() && !suspended_.load() && !parked_ && !floor_ && !hasObservers()) {
      suspend();
      return true;
    }
  }
  return false;
}

template <typename D>
void DialectTracer<D>::suspend() {
  const uint64_t began = monotonicNs();
  stop();  // flush (every record to its session), kinds off, unsubscribe, finalize
  // Their records delivered, graph launches of the tracer's sessions are done: a graph launch
  // made after the re-attach may carry the same correlation id.
  Profiler& profiler = Profiler::instance();
  profiler.pruneMultiLaunches(monotonicNs(), profiler.sourceMask(TimeSource::Tracer));
  quiet_.store(true);
  suspended_.store(true);
  suspensions_.fetch_add(1);
  lastSuspendNs_.store(monotonicNs() - began);
}

template <typename D>
void DialectTracer<D>::reattach() {
  const uint64_t began = monotonicNs();
  try {
    start();  // the acquire's sequence on the same library: subscribe, callbacks, buffers, kinds
  } catch (const std::exception&) {
    // Another tool took the library meanwhile: still suspended, tried again at the next wake.
    resumeFailures_.fetch_add(1);
    return;
  }
  suspended_.store(false);
  quiet_.store(false);
  lastResumeNs_.store(monotonicNs() - began);
}

}  // namespace ftp
