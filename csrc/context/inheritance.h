// Context a thread inherits for launches made while its own scope stack is empty.
//
// The rule (README, "Threads and autograd"):
//  1. A thread's own non-empty scope stack wins; scopes it enters on an empty stack nest under
//     what it inherits.
//  2. A thread started through threading.Thread.start while a session is open inherits the
//     starting thread's context at start() (scopes, innermost state, Python frames).
//  3. Any other thread (autograd's engine threads, threads of C++ libraries) inherits, while some
//     other thread waits in backward()/torch.autograd.grad, the context of the most recent such
//     "driving" thread at its call.
// Backward attribution by forward layer pushes "rooted" scope entries (ScopeEntry::rooted): their
// resolution restarts at ROOT, so they replace what lies below them for the launches above.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "context/thread_state.h"

namespace ftp {

struct ContextTree;

// The global generation of the driver registry: bumped whenever a driving thread begins or
// ends, so that a thread re-reads the registry only when it changed (one load otherwise).
extern std::atomic<uint64_t> gDriverGeneration;

// The effective context of the calling thread now: inherited base, then its own scopes.
// `withFrames` captures its Python frames too (the caller holds the GIL).
ContextSnapshot snapshotContext(bool withFrames);

// The inherited context of `ts`, or null. Cheap when nothing changed.
void refreshDriverContext(InheritedBase& base);
inline const InheritedContext* inheritedContext(ThreadState& ts) {
  InheritedBase& base = ts.base;
  if (base.started) return base.parent.get();
  const uint64_t generation = gDriverGeneration.load(std::memory_order_acquire);
  if (generation != base.generation) refreshDriverContext(base);
  return base.driver.get();
}

inline uint32_t inheritedState(ThreadState& ts) {
  const InheritedContext* c = inheritedContext(ts);
  return c ? c->state : 0;
}

// The state a launch (or a scope metric) of this thread falls under now, 0 for none: its own
// innermost state, else the inherited one (taken when the thread's first scope opened).
inline uint32_t currentState(ThreadState& ts) {
  return !ts.states.empty() ? ts.states.back() : ts.scopes.empty() ? inheritedState(ts) : ts.baseState;
}

// The node of the inherited scopes in `target`'s tree (ROOT when none); takes the tree lock.
uint32_t inheritedNode(ThreadState& ts, const ContextTree& target);
// Python context: puts the inherited frames in front of the thread's own.
void prependInheritedFrames(ThreadState& ts, std::vector<uint32_t>& frames);

// A thread started through threading.Thread.start takes the starter's snapshot (may be null).
void adoptParentContext(ContextSnapshot parent);
// Driving threads (backward / autograd.grad): begin returns a token for end.
uint64_t beginDriving();
void endDriving(uint64_t token);

}  // namespace ftp
