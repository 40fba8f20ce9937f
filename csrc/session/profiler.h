// The process-wide profiler: session slots, the launch path that captures each launch's
// context, and the record path that joins finished kernels to it. Every backend feeds it
// through onLaunch (on the launching thread) and onRecord (from the vendor's buffers).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "context/thread_state.h"
#include "core/flat_map.h"
#include "session/session.h"

namespace ftp {

class Profiler {
 public:
  static Profiler& instance();

  // Sessions. createSession returns the slot; throws std::runtime_error when all are taken.
  int createSession(ContextKind context, DataKind data);
  void setActive(int slot, bool active);
  // Finalize's first step: the session takes no more launches but still receives the records
  // of its launches, and of launches nobody saw, until it is removed.
  void beginClose(int slot);
  bool isActive(int slot) const;
  // Stops routing anything to the slot and frees it; the Session object stays valid.
  Session* removeSession(int slot);
  Session* session(int slot) const;
  uint32_t activeMask() const { return activeMask_.load(std::memory_order_acquire); }

  // Launch path: called on the launching thread just before a launch. `multiRecord` marks
  // launches that produce several records under one correlation id (graph launches).
  // `launchNs` (host monotonic) defaults to now; host-timed backends pass the launch's start.
  void onLaunch(uint32_t correlation, bool multiRecord, uint64_t launchNs = 0);
  // Record path: a finished kernel or copy.
  void onRecord(const DeviceRecord& record);
  // Launches seen by the sessions in `slotMask` whose records have not arrived yet.
  size_t pendingLaunches(uint32_t slotMask);
  // Forgets graph launches (several records each) made before `beforeNs`: call only after a
  // flush that waited for the device, when all their records have arrived. Returns how many.
  size_t pruneMultiLaunches(uint64_t beforeNs);

  // CUDA graphs. A launch captured into a graph runs nothing: the node it creates takes over
  // its context (called on the capturing thread, inside the launch call `correlation`), and
  // clones of the node (graph instantiation) inherit it. Replayed records carrying the node
  // id are then put under the graph launch's context: launch -> <captured_at> -> capture path.
  void onGraphNodeCreated(uint32_t correlation, uint64_t graphNode);
  void onGraphNodeCloned(uint64_t graphNode, uint64_t original);
  size_t capturedGraphNodes();

  // Extras of one launch for the session in `slot` (see LaunchExtra, Session::attachExtra).
  // Ignored when the slot holds no session.
  void attachExtra(int slot, uint32_t correlation, LaunchExtra extra);
  void enableExtras(int slot);
  void setMeanMetrics(int slot, const std::vector<uint32_t>& names);

  // Shadow context and states of the calling thread.
  void enterScope(uint32_t name, const std::vector<std::pair<uint32_t, double>>& metrics);
  void exitScope(bool cpuTimed);
  // Adds metrics to the node of the innermost scope (shadow sessions); context/scope_exit.cpp.
  void addScopeMetrics(const std::vector<std::pair<uint32_t, double>>& metrics);  // [scope parity]
  void pushState(uint32_t name);
  void popState();
  void setLaunchMetadata(LaunchMetadata* meta);

 private:
  Profiler() = default;
  struct PendingLaunch {
    uint64_t launchNs;
    LaunchMetadata* meta;
    uint32_t tid;
    uint32_t state;
    uint32_t node[kMaxSessions];
    uint16_t mask;
    bool multi;
  };

  struct CapturedContext {
    uint32_t node[kMaxSessions];
    uint32_t uid[kMaxSessions];  // the session each node belongs to (slots are reused)
    uint32_t state;
    uint16_t mask;
  };

  uint32_t resolveShadow(ThreadState& ts, Session& s);
  uint32_t resolvePython(ThreadState& ts, Session& s, bool& framesCaptured);
  template <typename F>
  void forEachActive(uint32_t mask, F&& f);

  std::atomic<Session*> slots_[kMaxSessions] = {};
  std::atomic<uint32_t> activeMask_{0};
  std::atomic<uint32_t> existsMask_{0};   // slots holding a session
  std::atomic<uint32_t> closingMask_{0};  // sessions being finalized
  std::atomic<uint32_t> nextUid_{1};
  std::mutex sessionsMutex_;
  std::mutex pendingMutex_;
  FlatMap<PendingLaunch> pending_;
  std::mutex graphMutex_;
  std::unordered_map<uint64_t, CapturedContext> captured_;  // graph node id -> capture context
  std::atomic<bool> anyCaptured_{false};
};

}  // namespace ftp
