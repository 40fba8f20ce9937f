#include "session/profiler.h"

#include <stdexcept>

#include "context/inheritance.h"  // [inheritance]
#include "context/python_frames.h"
#include "core/clock.h"

namespace ftp {

Profiler& Profiler::instance() {
  // Leaked on purpose: vendor threads may deliver records while static destructors run.
  static Profiler* profiler = new Profiler();
  return *profiler;
}

int Profiler::createSession(ContextKind context, DataKind data) {
  std::lock_guard<std::mutex> lock(sessionsMutex_);
  for (int slot = 0; slot < kMaxSessions; ++slot) {
    if (slots_[slot].load()) continue;
    // Sessions are never deleted: a vendor thread may still hold a pointer while another
    // thread finalizes. Their data is released by the caller once written.
    auto* s = new Session(nextUid_.fetch_add(1), slot, context, data);
    slots_[slot].store(s, std::memory_order_release);
    existsMask_.fetch_or(1u << slot, std::memory_order_acq_rel);
    activeMask_.fetch_or(1u << slot, std::memory_order_acq_rel);
    return slot;
  }
  throw std::runtime_error("too many concurrent profiling sessions (at most " +
                           std::to_string(kMaxSessions) + ")");
}

void Profiler::setActive(int slot, bool active) {
  if (slot < 0 || slot >= kMaxSessions || !slots_[slot].load()) return;
  if (active)
    activeMask_.fetch_or(1u << slot, std::memory_order_acq_rel);
  else
    activeMask_.fetch_and(~(1u << slot), std::memory_order_acq_rel);
}

void Profiler::beginClose(int slot) {
  if (slot < 0 || slot >= kMaxSessions || !slots_[slot].load()) return;
  setActive(slot, false);
  closingMask_.fetch_or(1u << slot, std::memory_order_acq_rel);
}

bool Profiler::isActive(int slot) const {
  return slot >= 0 && slot < kMaxSessions && (activeMask() >> slot & 1u);
}

Session* Profiler::session(int slot) const {
  return (slot >= 0 && slot < kMaxSessions) ? slots_[slot].load(std::memory_order_acquire) : nullptr;
}

Session* Profiler::removeSession(int slot) {
  std::lock_guard<std::mutex> lock(sessionsMutex_);
  Session* s = session(slot);
  if (!s) return nullptr;
  setActive(slot, false);
  {
    // Pending launches must not hand this slot's node ids to a later session in the slot.
    std::lock_guard<std::mutex> plock(pendingMutex_);
    std::vector<uint32_t> orphans;
    pending_.forEach([&](uint32_t corr, PendingLaunch& p) {
      if (!(p.mask & (1u << slot))) return;  // launches this session did not take stay known
      p.mask &= ~(1u << slot);
      if (!p.mask) orphans.push_back(corr);
    });
    for (uint32_t corr : orphans) {
      delete pending_.get(corr)->meta;
      pending_.erase(corr);
    }
  }
  closingMask_.fetch_and(~(1u << slot), std::memory_order_acq_rel);
  existsMask_.fetch_and(~(1u << slot), std::memory_order_acq_rel);
  slots_[slot].store(nullptr, std::memory_order_release);
  return s;
}

template <typename F>
void Profiler::forEachActive(uint32_t mask, F&& f) {
  while (mask) {
    int slot = __builtin_ctz(mask);
    mask &= mask - 1;
    if (Session* s = slots_[slot].load(std::memory_order_acquire)) f(slot, *s);
  }
}

uint32_t Profiler::resolveShadow(ThreadState& ts, Session& s) {
  auto& stack = ts.scopes;
  if (stack.empty()) return inheritedNode(ts, s);  // [inheritance] an empty stack inherits
  const int slot = s.slot;
  int resolved = static_cast<int>(stack.size()) - 1;
  while (resolved >= 0 && stack[resolved].uid[slot] != s.uid) --resolved;
  if (resolved == static_cast<int>(stack.size()) - 1) return stack[resolved].node[slot];
  // Resolve the scopes entered since this session last looked, under one lock.
  const uint32_t below = resolved >= 0 ? stack[resolved].node[slot] : inheritedNode(ts, s);  // [inheritance]
  std::lock_guard<std::mutex> lock(s.tree.mutex());
  uint32_t node = below;
  for (size_t i = resolved + 1; i < stack.size(); ++i) {
    if (stack[i].rooted) node = Tree::kRoot;  // [inheritance] backward under its forward scope
    node = s.tree.child(node, NodeKind::Scope, stack[i].name);
    stack[i].node[slot] = node;
    stack[i].uid[slot] = s.uid;
  }
  return node;
}

uint32_t Profiler::resolvePython(ThreadState& ts, Session& s, bool& framesCaptured) {
  if (!framesCaptured) {
    capturePythonFrames(ts.frames);
    prependInheritedFrames(ts, ts.frames);  // [inheritance] the starter's or driver's frames first
    framesCaptured = true;
    if (ts.frames != ts.cachedFrames) {
      ts.cachedFrames = ts.frames;
      for (auto& uid : ts.cachedUid) uid = 0;
    }
  }
  const int slot = s.slot;
  if (ts.cachedUid[slot] == s.uid) return ts.cachedNode[slot];
  std::lock_guard<std::mutex> lock(s.tree.mutex());
  uint32_t node = Tree::kRoot;
  for (uint32_t frame : ts.frames) node = s.tree.child(node, NodeKind::Frame, frame);
  ts.cachedNode[slot] = node;
  ts.cachedUid[slot] = s.uid;
  return node;
}

void Profiler::onLaunch(uint32_t correlation, bool multiRecord, uint64_t launchNs) {
  ThreadState& ts = threadState();
  const uint32_t mask = activeMask();
  if (!mask) {
    delete ts.takeMetadata();
    // Every session is deactivated: remember the launch anyway (for no session), so that its
    // record is known to belong to nobody rather than taken for a launch nobody saw.
    if (existsMask_.load(std::memory_order_acquire)) {
      PendingLaunch ignored{0, nullptr, 0, 0, {}, 0, multiRecord};
      std::lock_guard<std::mutex> lock(pendingMutex_);
      pending_.insert(correlation, ignored);
    }
    return;
  }
  PendingLaunch p;
  p.launchNs = launchNs ? launchNs : monotonicNs();
  p.meta = ts.takeMetadata();
  p.tid = currentTid();
  // [inheritance] no own state: the inherited one (taken when the thread's first scope opened)
  p.state = !ts.states.empty() ? ts.states.back() : ts.scopes.empty() ? inheritedState(ts) : ts.baseState;
  p.mask = 0;
  p.multi = multiRecord;
  bool framesCaptured = false;
  forEachActive(mask, [&](int slot, Session& s) {
    p.node[slot] = s.context == ContextKind::Shadow ? resolveShadow(ts, s)
                                                    : resolvePython(ts, s, framesCaptured);
    p.mask |= 1u << slot;
  });
  std::lock_guard<std::mutex> lock(pendingMutex_);
  pending_.insert(correlation, p);
}

void Profiler::onRecord(const DeviceRecord& record) {
  PendingLaunch p;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(pendingMutex_);
    if (PendingLaunch* entry = pending_.get(record.correlation)) {
      p = *entry;
      found = true;
      if (!p.multi) pending_.erase(record.correlation);
    }
  }
  if (!found) {
    // A launch we did not see (an API without a callback): keep the time, under ROOT.
    uint32_t receivers = activeMask() | closingMask_.load(std::memory_order_acquire);
    p = PendingLaunch{record.startNs, nullptr, 0, 0, {}, static_cast<uint16_t>(receivers), false};
  }
  // A record replayed from a graph (it carries a graph node id: CUPTI sets one on every graph
  // kernel, copy and set): under the graph launch, then the capture context of its node when
  // known, else "<captured_at:unknown>". Backends without node ids keep graph records directly
  // under the graph launch.
  const bool fromGraph = found && p.multi && record.graphNodeId != 0 && p.mask;
  CapturedContext captured{};
  bool haveCaptured = false;
  if (fromGraph && anyCaptured_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(graphMutex_);
    auto it = captured_.find(record.graphNodeId);
    if (it != captured_.end()) {
      captured = it->second;
      haveCaptured = true;
    }
  }
  forEachActive(p.mask, [&](int slot, Session& s) {
    if (!found) s.unattributed.fetch_add(1, std::memory_order_relaxed);
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

void Profiler::attachExtra(int slot, uint32_t correlation, LaunchExtra extra) {
  if (Session* s = session(slot)) s->attachExtra(correlation, std::move(extra));
}

void Profiler::enableExtras(int slot) {
  if (Session* s = session(slot)) s->enableExtras();
}

void Profiler::setMeanMetrics(int slot, const std::vector<uint32_t>& names) {
  if (Session* s = session(slot)) s->setMeanMetrics(names);
}

size_t Profiler::pruneMultiLaunches(uint64_t beforeNs) {
  std::vector<uint32_t> stale;
  std::lock_guard<std::mutex> lock(pendingMutex_);
  pending_.forEach([&](uint32_t corr, PendingLaunch& p) {
    if (p.multi && p.launchNs < beforeNs) stale.push_back(corr);
  });
  for (uint32_t corr : stale) {
    delete pending_.get(corr)->meta;
    pending_.erase(corr);
  }
  return stale.size();
}

void Profiler::onGraphNodeCreated(uint32_t correlation, uint64_t graphNode) {
  // One launch call normally creates one node; should it create more, they share the context.
  static thread_local uint32_t lastCorrelation = 0;
  static thread_local CapturedContext last{};
  static thread_local bool lastValid = false;
  PendingLaunch p;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(pendingMutex_);
    if (PendingLaunch* entry = pending_.get(correlation)) {
      if (entry->multi) return;  // a graph launch does not create nodes of its own
      p = *entry;
      found = true;
      pending_.erase(correlation);  // a captured launch runs nothing: no record will come
    }
  }
  if (found) {
    delete p.meta;
    CapturedContext c{};
    c.state = p.state;
    c.mask = 0;
    forEachActive(p.mask, [&](int slot, Session& s) {
      c.node[slot] = p.node[slot];
      c.uid[slot] = s.uid;
      c.mask |= 1u << slot;
    });
    lastCorrelation = correlation;
    last = c;
    lastValid = c.mask != 0;
  } else if (!(lastValid && lastCorrelation == correlation)) {
    return;  // not a launch we saw (made while no session was active, or untraced)
  }
  if (!lastValid) return;
  std::lock_guard<std::mutex> lock(graphMutex_);
  captured_[graphNode] = last;
  anyCaptured_.store(true, std::memory_order_release);
}

void Profiler::onGraphNodeCloned(uint64_t graphNode, uint64_t original) {
  if (!anyCaptured_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(graphMutex_);
  auto it = captured_.find(original);
  if (it == captured_.end()) return;
  CapturedContext c = it->second;  // copy first: inserting may rehash
  captured_[graphNode] = c;
}

size_t Profiler::capturedGraphNodes() {
  std::lock_guard<std::mutex> lock(graphMutex_);
  return captured_.size();
}

size_t Profiler::pendingLaunches(uint32_t slotMask) {
  std::lock_guard<std::mutex> lock(pendingMutex_);
  size_t n = 0;
  pending_.forEach([&](uint32_t, PendingLaunch& p) { n += !p.multi && (p.mask & slotMask); });
  return n;
}

void Profiler::enterScope(uint32_t name, const std::vector<std::pair<uint32_t, double>>& metrics) {
  ThreadState& ts = threadState();
  if (ts.scopes.empty()) ts.baseState = inheritedState(ts);  // [inheritance]
  ScopeEntry entry;
  entry.name = name;
  entry.startNs = monotonicNs();
  for (int i = 0; i < kMaxSessions; ++i) entry.uid[i] = 0;
  ts.scopes.push_back(entry);
  if (metrics.empty()) return;
  forEachActive(activeMask(), [&](int, Session& s) {
    if (s.context != ContextKind::Shadow) return;
    uint32_t node = resolveShadow(ts, s);
    std::lock_guard<std::mutex> lock(s.tree.mutex());
    for (const auto& m : metrics) s.tree.node(node).metrics.add(m.first, m.second);
  });
}

void Profiler::exitScope(bool cpuTimed) {
  ThreadState& ts = threadState();
  if (ts.scopes.empty()) return;
  const uint64_t now = monotonicNs();
  const ScopeEntry& top = ts.scopes.back();
  forEachActive(activeMask(), [&](int, Session& s) {
    if (s.data == DataKind::Trace) {
      std::lock_guard<std::mutex> lock(s.trace.mutex());
      s.trace.addScope(ScopeEvent{top.startNs, now, top.name, currentTid()});
    }
    if (cpuTimed && s.context == ContextKind::Shadow) {
      uint32_t node = resolveShadow(ts, s);
      std::lock_guard<std::mutex> lock(s.tree.mutex());
      s.tree.node(node).metrics.cpuTimeNs += now - top.startNs;
    }
  });
  ts.scopes.pop_back();
}

void Profiler::pushState(uint32_t name) { threadState().states.push_back(name); }

void Profiler::popState() {
  auto& states = threadState().states;
  if (!states.empty()) states.pop_back();
}

void Profiler::setLaunchMetadata(LaunchMetadata* meta) {
  ThreadState& ts = threadState();
  delete ts.pendingMetadata;
  ts.pendingMetadata = meta;
}

}  // namespace ftp
