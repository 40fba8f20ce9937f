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
// Records with no mapping are held until the end of the drain that delivered them (MSPTI hands
// over device records when unsubscribed: see DialectTracer::drain), and joined by the fallback:
// in start-time order to the launches made before the drain that got no mapping, in host order,
// only when the counts agree and no kernel starts before its launch began. Otherwise they stay
// unattributed. Both outcomes are counted; nothing is joined silently by a weaker rule.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "data/records.h"

namespace ftp {

class ExternalJoin {
 public:
  using Push = int (*)(uint32_t kind, uint64_t id);
  using Pop = int (*)(uint32_t kind, uint64_t* id);
  static constexpr uint32_t kExternalKind = 2;  // MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0
  static constexpr int kSerialWaitMs = 1000;
  static constexpr size_t kMaxWindows = 1u << 20;  // launch windows kept for the fallback

  void setCalls(Push push, Pop pop) { push_ = push, pop_ = pop; }
  bool ready() const { return push_ && pop_; }

  // Launch path, on the launching thread. enter returns the launch's id, or 0 inside a launch
  // already entered on this thread (a library launch inside a Triton launch: the kernel belongs
  // to the outer one). `fromHook`: Triton's launch hook, which never nests; an open hook launch
  // found at the next hook enter lost its exit (the launch raised) and is closed first.
  uint32_t enter(bool fromHook);
  void exit(bool fromHook);

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

  uint64_t joined() const { return joined_.load(); }
  uint64_t fallbackJoined() const { return fallbackJoined_.load(); }
  uint64_t unmatched() const { return unmatched_.load(); }
  uint64_t unserialized() const { return unserialized_.load(); }
  uint64_t mappings() const { return mappings_.load(); }

 private:
  struct Window {
    uint32_t id;
    uint64_t enterNs;
  };
  std::vector<DeviceRecord> resolveHeld(bool final, uint64_t beganNs);

  Push push_ = nullptr;
  Pop pop_ = nullptr;
  std::atomic<uint32_t> nextId_{0};
  std::timed_mutex serial_;  // held from push to pop (see above)
  std::mutex mutex_;         // the maps below
  std::unordered_map<uint32_t, uint32_t> external_;  // MSPTI correlation id -> our id
  std::unordered_set<uint32_t> mapped_;              // our ids that got a mapping
  std::vector<Window> windows_;
  std::vector<DeviceRecord> held_;
  std::atomic<uint64_t> joined_{0}, fallbackJoined_{0}, unmatched_{0}, unserialized_{0}, mappings_{0};
};

}  // namespace ftp
