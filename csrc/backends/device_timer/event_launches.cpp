#include "backends/device_timer/event_launches.h"

#include <stdexcept>

#include "core/clock.h"
#include "data/records.h"
#include "session/profiler.h"

namespace ftp {

EventLaunches::EventLaunches(EventDevice& device, TimerRing& ring, uint32_t pairs)
    : device_(device), ring_(ring), capacity_(pairs ? pairs : 1) {
  pairs_.reserve(capacity_);  // never moved: end() reads a pair while others are added
  for (Anchor& a : anchors_) {
    a.event = device_.create();
    if (!a.event) throw std::runtime_error("backend 'device_timer': no event for the event-timed launches' anchor");
  }
  std::lock_guard<std::mutex> drain(drainMutex_);
  anchorLocked();
}

EventLaunches::~EventLaunches() {
  drain();
  for (Pair& p : pairs_) device_.destroy(p.start), device_.destroy(p.end);
  for (Anchor& a : anchors_) device_.destroy(a.event);
}

void EventLaunches::anchorLocked() {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = generation_ + 1;
  }
  // The bracket of one record-and-wait is short on an idle stream; a wide one (the host thread
  // descheduled) is tried again. A try re-records the event, so the last try's bracket is kept.
  Anchor& a = anchors_[generation % kAnchors];
  uint64_t best = ~0ull, hostNs = 0;
  for (int i = 0; i < 4 && best > kAnchorBracketNs; ++i) {
    uint64_t host = 0, uncertainty = 0;
    if (!device_.anchor(a.event, host, uncertainty)) break;
    best = uncertainty, hostNs = host;
  }
  if (best == ~0ull) return;  // the old anchor stays in use
  a.hostNs = hostNs;
  std::lock_guard<std::mutex> lock(mutex_);
  generation_ = generation;
  stats_.anchorUncertaintyNs = best;
}

int EventLaunches::begin(uint64_t stream, uint32_t name, const int32_t grid[3]) {
  if (device_.capturing(stream)) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.captured;
    return kCapturing;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  int index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else if (pairs_.size() < capacity_) {
    Pair p;
    p.start = device_.create();
    p.end = device_.create();
    if (!p.start || !p.end) {
      if (p.start) device_.destroy(p.start);
      if (p.end) device_.destroy(p.end);
      ++stats_.untimed;
      return kUntimed;
    }
    index = int(pairs_.size());
    pairs_.push_back(p);
  } else {
    return kFull;
  }
  Pair& p = pairs_[size_t(index)];
  p.correlation = kEventCorrelationBase | (serial_++ & kEventCorrelationMask);
  p.name = name;
  p.stream = stream;
  p.generation = generation_;
  for (int i = 0; i < 3; ++i) p.grid[i] = grid[i];
  const uint32_t correlation = p.correlation;
  const uint64_t start = p.start;
  lock.unlock();
  if (!device_.record(start, stream)) {
    std::lock_guard<std::mutex> relock(mutex_);
    free_.push_back(index);
    ++stats_.untimed;
    return kUntimed;
  }
  // Its context, as the ring's own launches take it (deferred to the launch-exit hook for hook="triton").
  ring_.announceLaunch(correlation, monotonicNs());
  return index;
}

bool EventLaunches::end(int index, bool launched) {
  Pair p;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    p = pairs_[size_t(index)];
  }
  TimerRing::launchDone();  // a deferred launch whose exit hook did not run is announced now
  const bool timed = launched && device_.record(p.end, p.stream);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!timed) {
    Profiler::instance().forgetLaunch(p.correlation);
    free_.push_back(index);
    ++stats_.untimed;
    return false;
  }
  ++stats_.timed;
  pending_.push_back(index);
  return true;
}

void EventLaunches::awaitRoom() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty() || pairs_.size() < capacity_) return;
    ++stats_.poolWaits;
  }
  drain();
}

void EventLaunches::drain() {
  std::lock_guard<std::mutex> drainLock(drainMutex_);
  std::deque<int> batch;
  std::vector<Pair> copies;
  Anchor anchors[kAnchors];
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch.swap(pending_);
    for (int index : batch) copies.push_back(pairs_[size_t(index)]);
    generation = generation_;
  }
  for (uint32_t i = 0; i < kAnchors; ++i) anchors[i] = anchors_[i];
  uint64_t untimed = 0, delivered = 0;
  for (const Pair& p : copies) {
    // Anchors are reused in turn: the slot after the newest one may be being re-recorded (or was,
    // by an anchor that failed), so a pair that old has none.
    const bool anchored = generation - p.generation < kAnchors - 1;
    if (device_.wait(p.end) && anchored && deliver(p, anchors[p.generation % kAnchors])) {
      ++delivered;
      continue;
    }
    Profiler::instance().forgetLaunch(p.correlation);
    ++untimed;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int index : batch) free_.push_back(index);
    stats_.untimed += untimed;
    stats_.delivered += delivered;
    ++stats_.drains;
  }
  anchorLocked();
}

bool EventLaunches::deliver(const Pair& p, const Anchor& anchor) {
  int64_t sinceAnchor = 0, duration = 0;
  if (!device_.elapsedNs(anchor.event, p.start, sinceAnchor) || !device_.elapsedNs(p.start, p.end, duration))
    return false;
  const uint64_t start = uint64_t(int64_t(anchor.hostNs) + sinceAnchor);
  static constexpr int32_t kNoBlock[3] = {0, 0, 0};  // events do not see the launch's block
  ring_.deliverTimed(p.correlation, p.name, p.stream, start, start + uint64_t(duration > 0 ? duration : 0), p.grid,
                     kNoBlock);
  return true;
}

EventStats EventLaunches::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace ftp
