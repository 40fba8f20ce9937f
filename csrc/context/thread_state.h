// Per-thread context state: the shadow scope stack, the state stack, launch metadata waiting
// for the next launch, and caches that keep the launch path free of tree lookups.
#pragma once
#include <cstdint>
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
};

struct ThreadState {
  std::vector<ScopeEntry> scopes;
  std::vector<uint32_t> states;
  LaunchMetadata* pendingMetadata = nullptr;
  int apiDepth = 0;  // nesting of vendor API callbacks (runtime -> driver): only the outermost counts
  uint32_t apiCorrelation = 0;  // the outermost traced call's correlation id while it runs, else 0

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

  LaunchMetadata* takeMetadata() {
    LaunchMetadata* m = pendingMetadata;
    pendingMetadata = nullptr;
    return m;
  }
};

ThreadState& threadState();

}  // namespace ftp
