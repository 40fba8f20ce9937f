// The context of each launch the ring times, kept in the launch's slot until the slot's record is
// delivered, instead of in the profiler's shared map of pending launches: with the map, the
// launching thread (one insert a launch) and the ring's worker (one take a record) met on its one
// lock for every launch, and a launch cost about twice as much on the host while a readback was
// being delivered (bench/device_timer_claim.py).
//
// Launch number `seq` owns entry seq % slots from its claim until the worker has delivered its
// record; the ring claims the entry again only after that (its `freed` count). The entry's state
// says where the launch is:
//   Claimed  the slot is handed out (set under the ring's lock in claim);
//   Writing  the launching thread is publishing the context it resolved;
//   Ready    published: the worker takes it with the record;
//   Mapped   the context went to the profiler's map instead (deferred launches: hook="triton"
//            takes it at Triton's launch-exit hook, later than the claim);
//   Empty    taken, or abandoned: the worker reached a Claimed entry first (a launching thread
//            stalled between its claim and the publish for longer than the ring waits for it;
//            its record is then filed as a launch nobody saw, as the map did).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "session/launches.h"

namespace ftp {

class SlotLaunches {
 public:
  explicit SlotLaunches(uint32_t slots);
  ~SlotLaunches();  // frees the metadata of launches published and never taken
  SlotLaunches(const SlotLaunches&) = delete;
  SlotLaunches& operator=(const SlotLaunches&) = delete;

  // In claim, under the ring's lock: launch `seq` has its slot; `mapped`: its context goes to
  // the profiler's map.
  void claimed(uint64_t seq, bool mapped);
  // On the launching thread, after the claim: keeps `launch`. False when the worker went past
  // the slot first: the launch is then dropped, its metadata freed.
  bool publish(uint64_t seq, PendingLaunch& launch);

  enum class Taken { Found, Unknown, Mapped };
  // On the worker, with the slot's record: the launch's context into `out` (Found: the caller
  // owns out.meta), none (Unknown), or Mapped (the profiler's map has it).
  Taken take(uint64_t seq, PendingLaunch& out);

 private:
  struct Entry {
    std::atomic<uint64_t> state{0};
    PendingLaunch launch;
  };
  enum Phase : uint64_t { kClaimed = 0, kWriting = 1, kReady = 2, kMapped = 3 };
  static constexpr uint64_t kEmpty = 0;  // no tag: tags count launches from 1
  static uint64_t tag(uint64_t seq, Phase phase) { return (seq + 1) << 2 | phase; }
  Entry& entry(uint64_t seq) { return entries_[seq % slots_]; }

  const uint32_t slots_;
  std::unique_ptr<Entry[]> entries_;
};

}  // namespace ftp
