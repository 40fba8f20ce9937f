#include "session/profiler.h"

#include "context/inheritance.h"

#include "context/context_source.h"
#include "core/clock.h"

namespace ftp {

// Leaked (core/singleton.h): vendor threads may deliver records while static destructors run.
Profiler& Profiler::instance() { return leaked<Profiler>(); }

Session* Profiler::removeSession(int slot) {
  // Pending launches must not hand this slot's node ids to a later session in the slot.
  Session* s = sessions_.remove(slot, [&] { pending_.forgetSlot(slot); });
  noteActivity();
  return s;
}

void Profiler::addActivityListener(ActivityListener* listener) {
  std::lock_guard<std::mutex> lock(activityMutex_);
  for (ActivityListener*& l : listeners_) {
    if (l == listener) return;
    if (!l) {
      l = listener;
      return;
    }
  }
}

void Profiler::noteActivity() {
  // Under one lock, so that listeners see the changes in the order they happened; a step() of a
  // schedule sets an inactive session inactive again every step: no change, nothing told.
  std::lock_guard<std::mutex> lock(activityMutex_);
  const TracerDemand demand = tracerDemand();
  if (demand == demand_) return;
  demand_ = demand;
  for (ActivityListener* l : listeners_)
    if (l) l->onTracerDemand(demand);
}

void Profiler::onLaunch(uint32_t correlation, bool multiRecord, uint64_t launchNs, TimeSource source) {
  PendingLaunch p;
  resolveLaunch(p, multiRecord, launchNs, source);
  // With every session deactivated the launch is remembered anyway (for no session), so that its
  // record is known to belong to nobody rather than taken for a launch nobody saw.
  if (p.mask || (sessions_.existsMask() & sessions_.sourceMask(source))) pending_.insert(correlation, p);
}

void Profiler::resolveLaunch(PendingLaunch& p, bool multiRecord, uint64_t launchNs, TimeSource source) {
  ThreadState& ts = threadState();
  const uint32_t mask = sessions_.activeMask() & sessions_.sourceMask(source);
  if (!mask) {
    delete ts.takeMetadata();
    p = PendingLaunch{0, nullptr, 0, 0, {}, 0, multiRecord};
    return;
  }
  p.mask = 0;
  p.multi = multiRecord;
  p.launchNs = launchNs ? launchNs : monotonicNs();
  p.meta = ts.takeMetadata();
  p.tid = currentTid();
  p.state = currentState(ts);
  ++ts.launchSerial;
  sessions_.forEach(mask, [&](int slot, Session& s) {
    p.node[slot] = contextSource(s.context).resolve(ts, s.contextTree());
    p.mask |= 1u << slot;
  });
}

void Profiler::onRecord(const DeviceRecord& given, TimeSource source) {
  PendingLaunch p;
  const bool found = pending_.takeForRecord(given.correlation, p);
  deliverRecord(given, source, found, p);
}

void Profiler::deliverRecord(const DeviceRecord& given, TimeSource source, bool found, PendingLaunch& p) {
  // A record off the tracer's clock starts at its launch call (or now, its launch unseen): on
  // the profile's clock, its duration kept. Copied only then; the common record is used as is.
  DeviceRecord placed;
  if (given.offClock) {
    placed = given;
    placed.startNs = found ? p.launchNs : monotonicNs();
    placed.endNs = placed.startNs + given.endNs;
  }
  const DeviceRecord& record = given.offClock ? placed : given;
  if (!found) {
    // A launch we did not see (an API without a callback): keep the time, under ROOT.
    uint32_t receivers = (sessions_.activeMask() | sessions_.closingMask()) & sessions_.sourceMask(source);
    p = PendingLaunch{record.startNs, nullptr, 0, 0, {}, static_cast<uint16_t>(receivers), false};
  }
  // A record replayed from a graph (it carries a graph node id: CUPTI sets one on every graph
  // kernel, copy and set): under the graph launch, then the capture context of its node when
  // known, else "<captured_at:unknown>". Backends without node ids keep graph records directly
  // under the graph launch.
  const bool fromGraph = found && p.multi && record.graphNodeId != 0 && p.mask;
  CapturedContext captured{};
  const bool haveCaptured = fromGraph && graphs_.find(record.graphNodeId, captured);
  // A tracer's launch time is taken in the launch call, before the kernel can run; the device
  // timer's may be taken after the call returned (hook="triton"), so only tracers are checked.
  const bool checkClock = found && source == TimeSource::Tracer && !given.offClock;
  const int64_t lead = int64_t(p.launchNs) - int64_t(record.startNs);
  sessions_.forEach(p.mask, [&](int slot, Session& s) {
    if (!found) s.unattributed.fetch_add(1, std::memory_order_relaxed);
    if (given.offClock) s.placedAtLaunch.fetch_add(1, std::memory_order_relaxed);
    if (checkClock) s.noteLaunchLead(lead);
    uint32_t node = p.node[slot];
    uint32_t state = p.state;
    if (fromGraph) {
      const bool known = haveCaptured && (captured.mask >> slot & 1u) && captured.uid[slot] == s.uid;
      node = s.graftCaptured(node, known ? captured.node[slot] : Session::kUnknownCapture);
      if (known && captured.state) state = captured.state;
    }
    s.addRecord(node, state, record, p.meta, p.launchNs, p.tid);
  });
  if (found && !p.multi) delete p.meta;
}

void Profiler::onReplayRecord(const DeviceRecord& record) {
  CapturedContext captured{};
  const bool haveCaptured = graphs_.find(record.graphNodeId, captured);
  const uint32_t receivers = (sessions_.activeMask() | sessions_.closingMask()) &
                             sessions_.sourceMask(TimeSource::DeviceTimer);
  sessions_.forEach(receivers, [&](int slot, Session& s) {
    if (record.startNs < s.createdNs) return;  // replayed before the session began
    const bool known = haveCaptured && (captured.mask >> slot & 1u) && captured.uid[slot] == s.uid;
    const uint32_t node = known ? captured.node[slot] : s.graftCaptured(Tree::kRoot, Session::kUnknownCapture);
    s.addRecord(node, known ? captured.state : 0, record, nullptr, record.startNs, 0);  // no host launch seen
  });
}

void Profiler::onGraphNodeCreated(uint32_t correlation, uint64_t graphNode) {
  // One launch call normally creates one node; should it create more, they share the context.
  static thread_local uint32_t lastCorrelation = 0;
  static thread_local CapturedContext last{};
  static thread_local bool lastValid = false;
  PendingLaunch p;
  switch (pending_.takeCaptured(correlation, p)) {
    case PendingLaunches::Capture::GraphLaunch:
      return;
    case PendingLaunches::Capture::Taken: {
      delete p.meta;  // a captured launch runs nothing: no record will come
      CapturedContext c{};
      c.state = p.state;
      c.mask = 0;
      sessions_.forEach(p.mask, [&](int slot, Session& s) {
        c.node[slot] = p.node[slot];
        c.uid[slot] = s.uid;
        c.mask |= 1u << slot;
      });
      lastCorrelation = correlation;
      last = c;
      lastValid = c.mask != 0;
      break;
    }
    case PendingLaunches::Capture::Unknown:
      if (!(lastValid && lastCorrelation == correlation)) return;  // not a launch we saw (made
      break;  // while no session was active, or untraced)
  }
  if (lastValid) graphs_.remember(graphNode, last);
}

void Profiler::attachExtra(int slot, uint32_t correlation, LaunchExtra extra) {
  if (Session* s = session(slot)) s->attachExtra(correlation, std::move(extra));
}

void Profiler::enableExtras(int slot, bool afterRecords) {
  if (Session* s = session(slot)) s->enableExtras(afterRecords);
}

void Profiler::setMeanMetrics(int slot, const std::vector<uint32_t>& names) {
  if (Session* s = session(slot)) s->setMeanMetrics(names);
}

}  // namespace ftp
