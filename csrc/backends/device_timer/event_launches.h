// backend="device_timer": launches of compiled Triton kernels the stamps cannot reach (no stage
// text to stamp, the stamps refused, a kernel already using profile scratch) timed with two
// events on the launch's stream, recorded just before and just after the launch. Each launch
// gets a correlation id of its own range and its context at launch (Profiler::onLaunch, through
// the ring, which defers it for hook="triton" as for its own launches); its record is built at a
// drain (flush(), finalize(), a full pool) from the events' elapsed times, placed on the host
// clock by an anchor event whose host time was bracketed when it completed.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "backends/device_timer/timer_ring.h"

namespace ftp {

// 0xB0000000 .. 0xBFFFFFFF: clear of the ring's (0xC..), scoped launches' (0xD..) and graph
// nodes' (0xE..).
constexpr uint32_t kEventCorrelationBase = 0xB0000000u;
constexpr uint32_t kEventCorrelationMask = 0x0FFFFFFFu;

// What the event pool needs from a device (CUDA's driver, or the host stand-in of the CPU tests).
// Events are opaque handles; 0 is none.
class EventDevice {
 public:
  virtual ~EventDevice() = default;
  virtual RingDevice::Where onDevice() = 0;          // the calling thread launches on the ring's device
  virtual bool capturing(uint64_t stream) = 0;       // an event recorded there would be a graph node
  virtual uint64_t create() = 0;                     // an event that keeps its time; 0 on failure
  virtual void destroy(uint64_t event) = 0;
  virtual bool record(uint64_t event, uint64_t stream) = 0;
  virtual bool wait(uint64_t event) = 0;             // until it completed; false: it never will
  virtual bool elapsedNs(uint64_t from, uint64_t to, int64_t& ns) = 0;
  // Records `event` on the device's own stream and waits for it, the host clock read around
  // both: the host time the event stands for, and half the bracket as its uncertainty.
  virtual bool anchor(uint64_t event, uint64_t& hostNs, uint64_t& uncertaintyNs) = 0;
};

struct EventStats {
  uint64_t timed = 0;       // launches given a pair of events
  uint64_t delivered = 0;   // records handed to the profiler
  uint64_t captured = 0;    // launches on a capturing stream: no events, not timed
  uint64_t untimed = 0;     // launches whose events failed (or anchored too long ago)
  uint64_t poolWaits = 0;   // launches that found every pair in use and waited for a drain
  uint64_t drains = 0;
  uint64_t anchorUncertaintyNs = 0;  // the latest anchor's
};

class EventLaunches {
 public:
  static constexpr int kCapturing = -1;
  static constexpr int kUntimed = -2;
  static constexpr int kFull = -3;

  EventLaunches(EventDevice& device, TimerRing& ring, uint32_t pairs);  // anchors; throws when it cannot
  ~EventLaunches();  // drains, then destroys the events
  EventLaunches(const EventLaunches&) = delete;
  EventLaunches& operator=(const EventLaunches&) = delete;

  // On the launching thread, before the launch: the pair timing it (its start recorded, the
  // launch announced), kCapturing, kUntimed, or kFull (then awaitRoom() and begin again).
  int begin(uint64_t stream, uint32_t name, const int32_t grid[3]);
  // After the launch: its end recorded (`launched` false: the launch raised, no record); false
  // when it will have no record.
  bool end(int pair, bool launched);
  // Every pair in use is busy: drains (waits for their launches), counted.
  void awaitRoom();
  // Waits for every launch begun so far, delivers their records, takes a new anchor.
  void drain();
  EventStats stats();
  RingDevice::Where onDevice() { return device_.onDevice(); }

 private:
  static constexpr uint32_t kAnchors = 4;  // anchor slots, reused in turn: a pair may lag kAnchors - 2 drains
  static constexpr uint64_t kAnchorBracketNs = 20'000;  // an anchor's uncertainty tried again above this
  struct Pair {
    uint64_t start = 0, end = 0;  // events
    uint32_t correlation = 0, name = 0;
    uint64_t stream = 0;
    uint64_t generation = 0;  // the anchor recorded before its start event
    int32_t grid[3] = {0, 0, 0};
  };
  struct Anchor {
    uint64_t event = 0, hostNs = 0;
  };
  void anchorLocked();  // drainMutex_ held
  bool deliver(const Pair& pair, const Anchor& anchor);  // false: the elapsed times could not be read

  EventDevice& device_;
  TimerRing& ring_;
  const uint32_t capacity_;
  std::mutex mutex_;       // pairs, lists, stats, generation
  std::mutex drainMutex_;  // one drain at a time (anchors)
  std::vector<Pair> pairs_;
  std::vector<int> free_;
  std::deque<int> pending_;  // launched, awaiting their drain, in launch order
  Anchor anchors_[kAnchors];
  uint64_t generation_ = 0;
  uint32_t serial_ = 0;
  EventStats stats_;
};

}  // namespace ftp
