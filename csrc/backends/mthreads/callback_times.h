// Host times of MUPTI's launch callbacks (enter to exit), kept per correlation id for records
// that come without timestamps (a forced flush can hand over records of kernels it has no time
// for; MUSA 4.3's activity records may carry zeros): such a record takes its launch call's host
// times instead of being discarded, and is counted as callback-timed. A fixed ring indexed by
// correlation id, written without a lock on the launch path; a slot another launch has taken
// since (ids kSlots apart) no longer matches, and the record is discarded as before.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>

#include "core/clock.h"

namespace ftp {

class CallbackTimes {
 public:
  static constexpr size_t kSlots = 1u << 16;

  void enter(uint32_t correlation) {
    Slot& s = slots_[correlation % kSlots];
    s.correlation.store(0, std::memory_order_relaxed);  // invalid until the exit
    s.enterNs.store(monotonicNs(), std::memory_order_relaxed);
    s.pending.store(correlation, std::memory_order_release);
  }
  void exit(uint32_t correlation) {
    Slot& s = slots_[correlation % kSlots];
    if (s.pending.load(std::memory_order_acquire) != correlation) return;
    s.exitNs.store(monotonicNs(), std::memory_order_relaxed);
    s.correlation.store(correlation, std::memory_order_release);
  }
  // The launch call's host times, when its slot still holds them.
  bool find(uint32_t correlation, uint64_t& startNs, uint64_t& endNs) const {
    const Slot& s = slots_[correlation % kSlots];
    if (correlation == 0 || s.correlation.load(std::memory_order_acquire) != correlation) return false;
    startNs = s.enterNs.load(std::memory_order_relaxed);
    endNs = s.exitNs.load(std::memory_order_relaxed);
    return s.correlation.load(std::memory_order_acquire) == correlation && endNs >= startNs;
  }

 private:
  struct Slot {
    std::atomic<uint32_t> pending{0}, correlation{0};
    std::atomic<uint64_t> enterNs{0}, exitNs{0};
  };
  std::array<Slot, kSlots> slots_{};
};

}  // namespace ftp
