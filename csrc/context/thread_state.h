// Per-thread context state: the shadow scope stack, the state stack, launch metadata waiting
// for the next launch, and caches that keep the launch path free of tree lookups.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "data/records.h"

namespace ftp {

constexpr int kMaxSessions = 8;

struct ScopeEntry {
  uint32_t name;
  uint64_t startNs;
  // Per session slot: the tree node this scope resolved to, valid while uid matches the
  // session's uid (slots are reused by later sessions, uids never are).
  uint32_t node[kMaxSessions];
  uint32_t uid[kMaxSessions];
  // Resolution restarts at ROOT here instead of nesting under the entries below (pushed by
  // backward-by-forward-layer attribution: see context/inheritance.h).
  bool rooted = false;
};

// A thread's context frozen for another thread to inherit; immutable once made.
struct InheritedContext {
  std::vector<uint32_t> scopes;  // scope names, outermost first
  uint32_t state = 0;            // innermost state, 0 = none
  std::vector<uint32_t> frames;  // Python frames, outermost first
};
using ContextSnapshot = std::shared_ptr<const InheritedContext>;

struct InheritedBase {
  bool started = false;    // started through the patched threading.Thread.start
  ContextSnapshot parent;  // the starter's context at start(), when started
  uint64_t generation = 0;  // of the driver registry when `driver` was read
  ContextSnapshot driver;   // the driving thread's context, when not started
  // Per session slot: the node of the inherited scopes, valid while uid matches.
  uint32_t node[kMaxSessions] = {};
  uint32_t uid[kMaxSessions] = {};
};

struct ThreadState {
  std::vector<ScopeEntry> scopes;
  std::vector<uint32_t> states;
  LaunchMetadata* pendingMetadata = nullptr;
  int apiDepth = 0;  // nesting of vendor API callbacks (runtime -> driver): only the outermost counts
  uint32_t apiCorrelation = 0;  // the outermost traced call's correlation id while it runs, else 0
  // The tracer's callback epoch at the outermost call's entry: an exit lost to the launch
  // callbacks going off in between must not leave apiDepth raised (DialectTracer::onApi).
  uint32_t apiEpoch = 0;

  // Counts this thread's launches; a context source that does per-launch work once, whatever
  // the number of sessions, compares it with what it saw last (framesSerial).
  uint64_t launchSerial = 0;

  // Python context: the frames of the current launch (outermost first), the launch they were
  // captured at, and, per slot, the node they resolved to for the frames of the previous launch
  // on this thread.
  uint64_t framesSerial = 0;
  std::vector<uint32_t> frames;
  std::vector<uint32_t> cachedFrames;
  uint32_t cachedNode[kMaxSessions] = {};
  uint32_t cachedUid[kMaxSessions] = {};

  InheritedBase base;  // what launches on an empty stack inherit (context/inheritance.h)
  uint32_t baseState = 0;  // the inherited state when the first of the thread's own scopes opened
  std::vector<size_t> rootedPushes;  // entries each pushRootedScopes added, innermost last

  LaunchMetadata* takeMetadata() {
    LaunchMetadata* m = pendingMetadata;
    pendingMetadata = nullptr;
    return m;
  }
};

ThreadState& threadState();

}  // namespace ftp
