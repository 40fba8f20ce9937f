// How MSPTI's kernel records meet the launches that made them. MSPTI's callbacks never fill
// msptiCallbackData.correlationId (it is stack garbage), so launches are keyed on ids of our own,
// pushed as MSPTI external correlation ids around each launch: MSPTI then emits an
// EXTERNAL_CORRELATION record (our id -> its correlation id) when the runtime assigns the
// launch's correlation id, and the kernel record carries that correlation id.
//
// MSPTI keeps one external-id stack per process (not per thread, whatever its header says), so
// launches are serialised from push to pop: two threads interleaving would swap their ids
// without any sign in the records. A thread that waits more than kSerialWaitMs for another's
// launch goes on unserialised (counted) rather than hang behind a launch whose exit never came.
//
// Launches that cannot take a window (backends/cann/queued_join.h):
// - Triton launches on triton-ascend's task queue (enterQueued): the runtime launches on the
//   queue's thread later, so a window around the hook would bracket only the enqueue and hand its
//   id to whatever the queue thread runs meanwhile. No id is pushed; their kernel records join by
//   kernel name in queue order (the queue runs tasks first in, first out);
// - copies: MSPTI reports aclrtMemcpyAsync's mapping before the ENTER callback and stamps the
//   MEMCPY record with host times around the call, so a copy's record joins the one copy window
//   that lies inside its host span, when that is unique both ways.
// MSPTI also maps an aclrtLaunchKernel's correlation id before its ENTER callback, to whatever
// window is open then (another thread's, which this callback then waits for); the mapping made in
// the launch's own window comes later. So a window that a callback found open when it arrived is
// contested: records mapped to it are held until the drain's end, when the last mapping decides.
// Kernel records with no mapping and no queued launch of their name are held until the end of
// the drain that delivered them, and joined in start-time order to the kernel launches (made
// before the drain) that got no mapping, in host order, only when the counts agree and no
// kernel starts before its launch began. Otherwise they stay unattributed. Every outcome is
// counted per record kind; nothing is joined silently by a weaker rule.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backends/cann/queued_join.h"
#include "data/records.h"

namespace ftp {

class ExternalJoin {
 public:
  using Push = int (*)(uint32_t kind, uint64_t id);
  using Pop = int (*)(uint32_t kind, uint64_t* id);
  static constexpr uint32_t kExternalKind = 2;  // MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0
  static constexpr int kSerialWaitMs = 1000;
  static constexpr size_t kMaxWindows = 1u << 20;  // launch windows kept for the fallback
  // The rules a record can be joined by, and "none" (left unattributed): per record kind.
  enum Rule : size_t { kByExternalId = 0, kByLaunchOrder, kByQueueOrder, kByHostSpan, kUnjoined, kRules };
  static constexpr std::array<const char*, kRules> kRuleNames = {"external_id", "launch_order", "queue_order",
                                                                 "host_span", "unjoined"};
  static constexpr std::array<const char*, 3> kKindNames = {"kernel", "memcpy", "memset"};

  void setCalls(Push push, Pop pop) { push_ = push, pop_ = pop; }
  bool ready() const { return push_ && pop_; }

  // Launch path, on the launching thread. enter returns the launch's id, or 0 inside a launch
  // already entered on this thread (a library launch inside a Triton launch: the kernel belongs
  // to the outer one). `fromHook`: Triton's launch hook, which never nests; an open hook launch
  // found at the next hook enter lost its exit (the launch raised) and is closed first. `copy`:
  // a copy's callback (its record joins by host span, see above).
  uint32_t enter(bool fromHook, bool copy = false);
  void exit(bool fromHook);
  // A Triton launch put on a task queue: an id without a window (see above).
  uint32_t enterQueued(std::string_view kernelName, uint64_t stream);

  // Record path (the library's buffer thread).
  void map(uint64_t externalId, uint64_t correlationId);
  // Replaces `r.correlation` (MSPTI's) by the launch's id; false when no mapping is known yet.
  bool translate(DeviceRecord& r);
  void hold(const DeviceRecord& r);
  // After a drain that began at `beganNs`: joins or gives up on every held record, passing each
  // to `deliver`. Launches made since may still get their records; `final` (the stop) forgets all.
  template <typename F>
  void finish(F&& deliver, bool final, uint64_t beganNs) {
    std::vector<DeviceRecord> held = resolveHeld(final, beganNs);
    for (const DeviceRecord& r : held) deliver(r);
  }
  void reset();

  uint64_t joined() const { return total(kByExternalId); }
  uint64_t fallbackJoined() const { return total(kByLaunchOrder); }
  uint64_t unmatched() const { return total(kUnjoined); }
  uint64_t unserialized() const { return unserialized_.load(); }
  uint64_t mappings() const { return mappings_.load(); }
  uint64_t queuedLaunches() const { return queuedLaunches_.load(); }
  uint64_t count(size_t kind, Rule rule) const { return counts_[kind][rule].load(); }
  uint64_t total(Rule rule) const { return count(0, rule) + count(1, rule) + count(2, rule); }

 private:
  struct Window {
    uint32_t id;
    uint64_t enterNs;
    uint64_t exitNs;  // 0 while open
    bool copy;
  };
  std::vector<DeviceRecord> resolveHeld(bool final, uint64_t beganNs);
  void joinByLaunchOrder(std::vector<DeviceRecord>& orphans, uint64_t beganNs, std::vector<DeviceRecord>& done);
  void joinCopies(std::vector<DeviceRecord>& copies, uint64_t beganNs, std::vector<DeviceRecord>& done);
  void counted(const DeviceRecord& r, Rule rule) {
    counts_[size_t(r.kind) < 3 ? size_t(r.kind) : 0][rule].fetch_add(1, std::memory_order_relaxed);
  }

  Push push_ = nullptr;
  Pop pop_ = nullptr;
  std::atomic<uint32_t> nextId_{0};
  std::timed_mutex serial_;  // held from push to pop (see above)
  std::mutex mutex_;         // the maps below
  std::unordered_map<uint32_t, uint32_t> external_;  // MSPTI correlation id -> our id
  std::unordered_set<uint32_t> mapped_;              // our ids that got a mapping
  std::unordered_set<uint32_t> contested_;           // windows a callback found open (see above)
  std::atomic<uint32_t> openWindow_{0};              // the window holding serial_
  std::vector<Window> windows_;
  std::vector<DeviceRecord> held_;
  QueuedLaunches queued_;
  std::array<std::array<std::atomic<uint64_t>, kRules>, 3> counts_{};
  std::atomic<uint64_t> unserialized_{0}, mappings_{0}, queuedLaunches_{0};
};

}  // namespace ftp
