#include "backends/device_timer/slot_launches.h"

#include <thread>

namespace ftp {

SlotLaunches::SlotLaunches(uint32_t slots) : slots_(slots), entries_(new Entry[slots]) {}

SlotLaunches::~SlotLaunches() {
  for (uint32_t i = 0; i < slots_; ++i) {
    if ((entries_[i].state.load(std::memory_order_acquire) & 3u) == kReady) delete entries_[i].launch.meta;
  }
}

void SlotLaunches::claimed(uint64_t seq, bool mapped) {
  // The previous launch of this slot was taken before the ring let the slot go (its freed count
  // moved under the ring's lock, which the claim holds): nobody else touches the entry now.
  entry(seq).state.store(tag(seq, mapped ? kMapped : kClaimed), std::memory_order_relaxed);
}

bool SlotLaunches::publish(uint64_t seq, PendingLaunch& launch) {
  Entry& e = entry(seq);
  uint64_t expected = tag(seq, kClaimed);
  if (!e.state.compare_exchange_strong(expected, tag(seq, kWriting), std::memory_order_acquire)) {
    delete launch.meta;  // abandoned by the worker
    launch.meta = nullptr;
    return false;
  }
  e.launch = launch;
  e.state.store(tag(seq, kReady), std::memory_order_release);
  return true;
}

SlotLaunches::Taken SlotLaunches::take(uint64_t seq, PendingLaunch& out) {
  Entry& e = entry(seq);
  for (;;) {
    uint64_t state = e.state.load(std::memory_order_acquire);
    if (state == tag(seq, kReady)) {
      out = e.launch;
      e.launch.meta = nullptr;
      e.state.store(kEmpty, std::memory_order_relaxed);
      return Taken::Found;
    }
    if (state == tag(seq, kMapped)) return Taken::Mapped;
    if (state == tag(seq, kWriting)) {  // the launching thread is copying it in: a moment
      std::this_thread::yield();
      continue;
    }
    if (state == tag(seq, kClaimed) &&
        !e.state.compare_exchange_strong(state, kEmpty, std::memory_order_acq_rel)) {
      continue;  // it began publishing meanwhile
    }
    return Taken::Unknown;
  }
}

}  // namespace ftp
