// The process-wide profiler, the one object every backend feeds: onLaunch on the launching
// thread, onRecord from the vendor's buffers. It wires four parts, each in its own file:
//   session_registry.h  the session slots (uid, active and closing masks);
//   launches.h          launch correlation: pending launches and graph captures;
//   context_source.h    where a launch's context comes from (shadow scopes, Python frames);
//   scopes.cpp          the shadow scope and state stacks of the calling thread.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "context/thread_state.h"
#include "core/singleton.h"
#include "session/launches.h"
#include "session/session.h"
#include "session/session_registry.h"

namespace ftp {

// Told of every scope entered and left on any thread while installed (the cann backend's
// mirroring of scopes as mstx ranges). `depth`: open scopes after entering / before leaving.
struct ScopeListener {
  virtual ~ScopeListener() = default;
  virtual void onScopeEnter(uint32_t name, size_t depth) = 0;
  virtual void onScopeExit(size_t depth) = 0;
};

// What the tracer-timed sessions ask of a vendor tracer's collection: On (one takes launches),
// Off (there are sessions and none takes launches or is closing: all deactivated, a schedule
// between windows), Either (none left, or one closing: finalize's flush and the tracer's
// release decide; switching then would only cost the next session).
enum class TracerDemand : uint8_t { On, Off, Either };

// Told when the demand changes (a vendor tracer switches its library's collection off while it
// is Off: DialectTracer::settle). Called in order, one at a time; the listener reads the demand
// again rather than trust its argument alone.
struct ActivityListener {
  virtual ~ActivityListener() = default;
  virtual void onTracerDemand(TracerDemand demand) = 0;
};

class Profiler {
 public:
  static Profiler& instance();

  // Sessions. createSession returns the slot; throws std::runtime_error when all are taken.
  int createSession(ContextKind context, DataKind data, TimeSource source = TimeSource::Tracer, bool active = true) {
    const int slot = sessions_.create(context, data, source, active);
    noteActivity();
    return slot;
  }
  void setActive(int slot, bool active) {
    sessions_.setActive(slot, active);
    noteActivity();
  }
  void setTimeSource(int slot, TimeSource source) {
    sessions_.setSource(slot, source);
    noteActivity();
  }
  // Finalize's first step: the session takes no more launches but still receives the records
  // of its launches, and of launches nobody saw, until it is removed.
  void beginClose(int slot) {
    sessions_.beginClose(slot);
    noteActivity();
  }
  bool isActive(int slot) const { return sessions_.isActive(slot); }
  // Stops routing anything to the slot and frees it; the Session object stays valid.
  Session* removeSession(int slot);
  Session* session(int slot) const { return sessions_.at(slot); }
  uint32_t activeMask() const { return sessions_.activeMask(); }
  // The active sessions whose kernel times come from `source`.
  uint32_t activeMask(TimeSource source) const { return sessions_.activeMask() & sessions_.sourceMask(source); }
  TracerDemand tracerDemand() const {
    const uint32_t ofTracer = sessions_.sourceMask(TimeSource::Tracer);
    if (sessions_.activeMask() & ofTracer) return TracerDemand::On;
    if (sessions_.closingMask() & ofTracer) return TracerDemand::Either;
    return (sessions_.existsMask() & ofTracer) ? TracerDemand::Off : TracerDemand::Either;
  }
  // Adds a listener for the process (vendor tracers are never destroyed); at most kMaxListeners.
  void addActivityListener(ActivityListener* listener);

  // Launch path: called on the launching thread just before a launch. `multiRecord` marks
  // launches that produce several records under one correlation id (graph launches).
  // `launchNs` (host monotonic) defaults to now; host-timed backends pass the launch's start.
  // Only the sessions of `source` see the launch (and its record).
  void onLaunch(uint32_t correlation, bool multiRecord, uint64_t launchNs = 0,
                TimeSource source = TimeSource::Tracer);
  // Record path: a finished kernel or copy, from `source`.
  void onRecord(const DeviceRecord& record, TimeSource source = TimeSource::Tracer);
  // The two paths for a backend that keeps its pending launches itself (the device timer's ring,
  // one per slot) instead of in the shared map: resolveLaunch fills `out` as onLaunch keeps a
  // launch (out.mask 0: no session of `source` was active), and deliverRecord files a record
  // with its launch (`found` false: a launch nobody saw), taking ownership of `launch.meta`.
  void resolveLaunch(PendingLaunch& out, bool multiRecord, uint64_t launchNs, TimeSource source);
  void deliverRecord(const DeviceRecord& record, TimeSource source, bool found, PendingLaunch& launch);
  // A launch whose record will never come (its kernel did not run): forgets it.
  void forgetLaunch(uint32_t correlation) {
    PendingLaunch p;
    if (pending_.takeForRecord(correlation, p) && !p.multi) delete p.meta;
  }
  // Launches seen by the sessions in `slotMask` whose records have not arrived yet.
  size_t pendingLaunches(uint32_t slotMask) { return pending_.count(slotMask); }
  // Forgets graph launches (several records each) made before `beforeNs`: call only after a
  // flush that waited for the device, when all their records have arrived. Returns how many.
  // With `ofSlots`, only those no session outside these slots took.
  size_t pruneMultiLaunches(uint64_t beforeNs, uint32_t ofSlots = ~0u) { return pending_.pruneMulti(beforeNs, ofSlots); }
  // The sessions whose kernel times come from `source` (open or closing).
  uint32_t sourceMask(TimeSource source) const { return sessions_.sourceMask(source); }
  // One graph launch whose records have all been delivered (or never will be): forgotten.
  void forgetGraphLaunch(uint32_t correlation) { pending_.forgetMulti(correlation); }
  // Whether launch `correlation` is still pending (its sessions may have gone since).
  bool launchPending(uint32_t correlation) { return pending_.contains(correlation); }

  // CUDA graphs. A launch captured into a graph runs nothing: the node it creates takes over
  // its context (called on the capturing thread, inside the launch call `correlation`), and
  // clones of the node (graph instantiation) inherit it. Replayed records carrying the node
  // id are then put under the graph launch's context: launch -> <captured_at> -> capture path.
  void onGraphNodeCreated(uint32_t correlation, uint64_t graphNode);
  void onGraphNodeCloned(uint64_t graphNode, uint64_t original) { graphs_.clone(graphNode, original); }
  // A record replayed from graph node `record.graphNodeId` whose graph launch nobody saw (the
  // device timer sees replays, not graph launches): under the node's capture context in the
  // sessions that saw the capture, under "<captured_at:unknown>" in the others; a session takes
  // only replays that started after it did. Device-timer sessions only.
  void onReplayRecord(const DeviceRecord& record);
  size_t capturedGraphNodes() { return graphs_.size(); }

  // Extras of one launch for the session in `slot` (see LaunchExtra, Session::attachExtra).
  // Ignored when the slot holds no session.
  void attachExtra(int slot, uint32_t correlation, LaunchExtra extra);
  void enableExtras(int slot, bool afterRecords);
  void setMeanMetrics(int slot, const std::vector<uint32_t>& names);

  // Shadow context and states of the calling thread (scopes.cpp).
  void enterScope(uint32_t name, const ScopeMetrics& metrics);
  void exitScope(bool cpuTimed);
  // Adds metrics to the node of the innermost scope (shadow sessions; scopes.cpp).
  void addScopeMetrics(const ScopeMetrics& metrics);
  // Backward by forward layer: pushes `scopes` (outermost first, the first one rooted) on the
  // calling thread's stack; popRootedScopes removes what the matching push added.
  void pushRootedScopes(const std::vector<uint32_t>& scopes);
  void popRootedScopes();
  void pushState(uint32_t name);
  void popState();
  void setLaunchMetadata(LaunchMetadata* meta);

  // One listener at a time (nullptr removes it); its owner keeps it alive for the process.
  void setScopeListener(ScopeListener* listener) { scopeListener_.store(listener, std::memory_order_release); }

 private:
  friend Profiler& leaked<Profiler>();
  Profiler() = default;

  // After any change of the session masks: tells the listeners when tracerDemand() changed.
  void noteActivity();

  SessionRegistry sessions_;
  static constexpr size_t kMaxListeners = 4;
  std::mutex activityMutex_;  // noteActivity and addActivityListener, one at a time
  ActivityListener* listeners_[kMaxListeners] = {};
  TracerDemand demand_ = TracerDemand::Either;  // what the listeners were last told
  PendingLaunches pending_;
  GraphCaptures graphs_;
  std::atomic<ScopeListener*> scopeListener_{nullptr};
};

}  // namespace ftp
