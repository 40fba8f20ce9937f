// Launch correlation: what the profiler remembers about a launch between the launch call and its
// device records. A pending launch holds the context each session resolved at the call, keyed
// by the vendor's correlation id; a graph launch (several records under one id) stays until
// pruned. A launch captured into a CUDA graph runs nothing: the graph node it creates takes
// over its context, clones of the node inherit it, and records replayed from the node find it.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "context/thread_state.h"
#include "core/flat_map.h"
#include "data/records.h"

namespace ftp {

struct PendingLaunch {
  uint64_t launchNs;
  LaunchMetadata* meta;  // owned: deleted when the launch is forgotten
  uint32_t tid;
  uint32_t state;
  uint32_t node[kMaxSessions];  // per slot: the context node the session resolved
  uint16_t mask;                // slots that took the launch
  bool multi;                   // several records under one correlation id (graph launches)
};

// The launches whose records have not arrived yet. One lock; no allocation per launch. The two
// calls of the launch and record paths are inline, as they were inside the profiler.
class PendingLaunches {
 public:
  void insert(uint32_t correlation, const PendingLaunch& launch) {
    std::lock_guard<std::mutex> lock(mutex_);
    map_.insert(correlation, launch);
  }
  // Copies out launch `correlation`; a single-record launch is forgotten, its one record having
  // come (the caller then owns `meta`). False when the launch is unknown.
  bool takeForRecord(uint32_t correlation, PendingLaunch& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    PendingLaunch* entry = map_.get(correlation);
    if (!entry) return false;
    out = *entry;
    if (!out.multi) map_.erase(correlation);
    return true;
  }
  enum class Capture { Taken, GraphLaunch, Unknown };
  // For the graph node a captured launch creates: a single-record launch is taken (no record
  // will come; the caller owns `meta`), a graph launch is left alone.
  Capture takeCaptured(uint32_t correlation, PendingLaunch& out);
  // The slot's session is going: its node ids must not reach a later session in the slot.
  void forgetSlot(int slot);
  // Forgets graph launches made before `beforeNs` that no slot outside `ofSlots` took; returns
  // how many.
  size_t pruneMulti(uint64_t beforeNs, uint32_t ofSlots = ~0u);
  // Forgets one graph launch (several records under one id); false when it is not pending.
  bool forgetMulti(uint32_t correlation);
  bool contains(uint32_t correlation) {
    std::lock_guard<std::mutex> lock(mutex_);
    return map_.get(correlation) != nullptr;
  }
  // Single-record launches taken by the sessions in `slotMask`.
  size_t count(uint32_t slotMask);

 private:
  void erase(uint32_t correlation);  // mutex_ held; deletes the metadata

  std::mutex mutex_;
  FlatMap<PendingLaunch> map_;
};

// The capture-time context of one graph node, per session.
struct CapturedContext {
  uint32_t node[kMaxSessions];
  uint32_t uid[kMaxSessions];  // the session each node belongs to (slots are reused)
  uint32_t state;
  uint16_t mask;
};

// Graph node id -> the context of the launch that created it (or of the node it was cloned from).
class GraphCaptures {
 public:
  void remember(uint64_t graphNode, const CapturedContext& context);
  void clone(uint64_t graphNode, uint64_t original);
  // False when the node is unknown; lock-free while no node was ever captured.
  bool find(uint64_t graphNode, CapturedContext& out);
  size_t size();

 private:
  std::mutex mutex_;
  std::unordered_map<uint64_t, CapturedContext> captured_;
  std::atomic<bool> any_{false};
};

}  // namespace ftp
