// The process-wide profiler: session slots, the launch path that captures each launch's
// context, and the record path that joins finished kernels to it. Every backend feeds it
// through onLaunch (on the launching thread) and onRecord (from the vendor's buffers).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
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

  // Shadow context and states of the calling thread.
  void enterScope(uint32_t name, const std::vector<std::pair<uint32_t, double>>& metrics);
  void exitScope(bool cpuTimed);
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
};

}  // namespace ftp
