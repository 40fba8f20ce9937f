// The shadow scope stack and the state stack of the calling thread (ThreadState): scopes
// entered and exited by flagtree.profiler.scope, states pushed and popped around launches,
// and the metadata waiting for the thread's next launch.
#include <mutex>

#include "context/context_source.h"
#include "context/inheritance.h"
#include "core/clock.h"
#include "session/profiler.h"

namespace ftp {

namespace {
// Where a scope's metrics (given at entry or exit, cpu_time) go in `s`: the scope's node, or under
// a state the state's node below it, as a kernel launched there would be (TreeStore::recordNode).
uint32_t scopeMetricNode(ThreadState& ts, Session& s) {
  const uint32_t node = contextSource(ContextKind::Shadow).resolve(ts, s.contextTree());
  const uint32_t state = currentState(ts);
  if (!state) return node;
  std::lock_guard<std::mutex> lock(s.contexts().mutex());
  return s.contexts().child(node, NodeKind::State, state);
}
}  // namespace

void Profiler::enterScope(uint32_t name, const ScopeMetrics& metrics) {
  ThreadState& ts = threadState();
  if (ts.scopes.empty()) ts.baseState = inheritedState(ts);  // a first scope nests under the inherited state
  ScopeEntry entry;
  entry.name = name;
  entry.startNs = monotonicNs();
  for (int i = 0; i < kMaxSessions; ++i) entry.uid[i] = 0;
  ts.scopes.push_back(entry);
  if (ScopeListener* l = scopeListener_.load(std::memory_order_acquire)) l->onScopeEnter(name, ts.scopes.size());
  if (metrics.empty()) return;
  sessions_.forEach(sessions_.activeMask(), [&](int, Session& s) {
    if (s.context == ContextKind::Shadow) s.store().addScopeMetrics(scopeMetricNode(ts, s), metrics);
  });
}

// Scope metrics given at exit (exit_scope(name, metrics), as Proton's API allows): they add to
// the node of the scope being left, exactly as metrics given at entry do.
void Profiler::addScopeMetrics(const ScopeMetrics& metrics) {
  ThreadState& ts = threadState();
  if (metrics.empty() || ts.scopes.empty()) return;
  sessions_.forEach(sessions_.activeMask(), [&](int, Session& s) {
    if (s.context == ContextKind::Shadow) s.store().addScopeMetrics(scopeMetricNode(ts, s), metrics);
  });
}

void Profiler::exitScope(bool cpuTimed) {
  ThreadState& ts = threadState();
  if (ts.scopes.empty()) return;
  if (ScopeListener* l = scopeListener_.load(std::memory_order_acquire)) l->onScopeExit(ts.scopes.size());
  const uint64_t now = monotonicNs();
  const ScopeEntry& top = ts.scopes.back();
  sessions_.forEach(sessions_.activeMask(), [&](int, Session& s) {
    const bool timed = cpuTimed && s.context == ContextKind::Shadow;
    s.store().closeScope(ScopeEvent{top.startNs, now, top.name, currentTid()},
                         timed ? scopeMetricNode(ts, s) : DataStore::kNoNode);
  });
  ts.scopes.pop_back();
}

// Backward by forward layer (context/inheritance.h): the pushed scopes' first entry is rooted, so
// their resolution restarts at ROOT.
void Profiler::pushRootedScopes(const std::vector<uint32_t>& scopes) {
  ThreadState& ts = threadState();
  ts.rootedPushes.push_back(ts.scopes.size());
  if (scopes.empty()) return;
  for (uint32_t name : scopes) enterScope(name, {});
  ts.scopes[ts.rootedPushes.back()].rooted = true;
}

void Profiler::popRootedScopes() {
  ThreadState& ts = threadState();
  if (ts.rootedPushes.empty()) return;
  const size_t depth = ts.rootedPushes.back();
  ts.rootedPushes.pop_back();
  // Scopes a backward function left open above ours go with them: the stack below stays exact.
  while (ts.scopes.size() > depth) exitScope(false);
}

void Profiler::pushState(uint32_t name) { threadState().states.push_back(name); }

void Profiler::popState() {
  auto& states = threadState().states;
  if (!states.empty()) states.pop_back();
}

void Profiler::setLaunchMetadata(LaunchMetadata* meta) {
  ThreadState& ts = threadState();
  delete ts.takeMetadata();
  ts.pendingMetadata = meta;
}

}  // namespace ftp
