#include "backends/device_timer/timer_ring.h"

#include <algorithm>

#include "backends/device_timer/graph_area.h"
#include "backends/device_timer/slot_record.h"

#include "context/thread_state.h"
#include "core/clock.h"
#include "data/records.h"
#include "session/profiler.h"

namespace ftp {

namespace {

// Correlation ids of timed launches: their own range, clear of CUPTI's and the host backends'.
constexpr uint32_t kCorrelationBase = 0xC0000000u;
// 0xD0000000 and up: launches with kernel-side scopes (scoped_launches.h), 0xE0000000 and up:
// graph nodes (graph_area.h). Ids only need to be unique among launches awaiting their record
// (at most `slots`, <= 2^24).
constexpr uint32_t kCorrelationMask = 0x0FFFFFFFu;
// A thread whose latest claim is older than this has queued its launch (a launch call takes
// microseconds); without it one thread that stopped launching would hold every readback back.
constexpr uint64_t kQueuedAfterNs = 20'000'000;

struct Deferred {
  uint32_t correlation;
  uint64_t launchNs;
  bool pending;
  uint64_t graphNode;  // a captured launch: the node its replays carry, else 0
};
thread_local Deferred deferred{0, 0, false, 0};

// The launch's context, resolved on the launching thread (shadow, python, ...); a captured
// launch's context goes to its graph node, where the replays find it.
void announce(uint32_t correlation, uint64_t launchNs, uint64_t graphNode) {
  Profiler::instance().onLaunch(correlation, false, launchNs, TimeSource::DeviceTimer);
  if (graphNode) Profiler::instance().onGraphNodeCreated(correlation, graphNode);
}

}  // namespace

void TimerRing::launchDone() {
  if (!deferred.pending) return;
  deferred.pending = false;
  announce(deferred.correlation, deferred.launchNs, deferred.graphNode);
}

void TimerRing::announceOrDefer(uint32_t correlation, uint64_t launchNs, uint64_t graphNode) {
  if (defer_.load(std::memory_order_relaxed)) {
    deferred = Deferred{correlation, launchNs, true, graphNode};  // a launch that never reached its exit hook is dropped
  } else {
    announce(correlation, launchNs, graphNode);
  }
}

TimerRing::TimerRing(std::unique_ptr<RingDevice> device, uint32_t slots, uint32_t batch, uint32_t deviceId,
                     ClockMap clock, GraphOptions graphs)
    : device_(std::move(device)), base_(device_->deviceBase()), slots_(slots), batch_(batch ? batch : 1), deviceId_(deviceId), info_(slots),
      launches_(slots), clock_(clock),
      graphs_(graphs.records ? std::make_unique<GraphArea>(*device_, graphs.records, graphs.nodesPerChunk, graphs.maxChunks)
                             : nullptr) {
  worker_ = std::thread([this] { work(); });
}

TimerRing::~TimerRing() {
  drain();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  workCv_.notify_all();
  worker_.join();
}

uint16_t TimerRing::streamIndexLocked(uint64_t stream) {
  if (stream == lastStream_) return lastStreamId_;
  auto it = streamIds_.find(stream);
  if (it == streamIds_.end()) {
    it = streamIds_.emplace(stream, uint16_t(streamIds_.size())).first;
    streams_.push_back(stream);
  }
  lastStream_ = stream;
  lastStreamId_ = it->second;
  return it->second;
}

uint64_t TimerRing::claim(uint64_t stream) {
  const RingDevice::Where where = device_->onRingDevice();
  if (where == RingDevice::kNoContext) return kNoContext;
  if (where == RingDevice::kNo) {
    countOtherDevice();
    return 0;
  }
  const uint64_t now = monotonicNs();
  if (device_->capturing(stream)) return claimCaptured(stream, now);
  // Between a schedule's windows, or a trigger's, the record would be nobody's: no slot, so no
  // readback, no delivery and no stamp writes (the stamps skip a null pointer).
  if (!Profiler::instance().activeMask(TimeSource::DeviceTimer)) {
    idle_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t seq = next_;
  if (seq - freed_ >= slots_) return kFull;
  next_ = seq + 1;
  ++stats_.claimed;
  ThreadEntry& me = threads_[currentTid()];
  me.pending = seq + 1;
  me.claimNs = now;
  const uint32_t slot = uint32_t(seq % slots_);
  const uint32_t correlation = kCorrelationBase | uint32_t(seq & kCorrelationMask);
  info_[slot] = SlotInfo{correlation, streamIndexLocked(stream)};
  const bool mapped = defer_.load(std::memory_order_relaxed);
  launches_.claimed(seq, mapped);
  if (seq >= scheduled_ + batch_) {
    const uint64_t upTo = frontierLocked(now, false);
    if (upTo >= scheduled_ + batch_) scheduleLocked(upTo);
  }
  lock.unlock();
  // Its record cannot be read back before this: the slot is only read once this thread claims
  // again (or, past kQueuedAfterNs, without it: slot_launches.h).
  if (mapped) {
    announceOrDefer(correlation, now, 0);
  } else {
    publishLaunch(seq, now);
  }
  return (base_ + uint64_t(slot) * kTimerSlotBytes) | kSlotMark;
}

void TimerRing::publishLaunch(uint64_t seq, uint64_t launchNs) {
  PendingLaunch launch;
  Profiler::instance().resolveLaunch(launch, false, launchNs, TimeSource::DeviceTimer);
  launches_.publish(seq, launch);
}

void TimerRing::deliverTimed(uint32_t correlation, uint32_t name, uint64_t stream, uint64_t startNs, uint64_t endNs,
                             const int32_t grid[3], const int32_t block[3]) {
  DeviceRecord r;
  r.kind = RecordKind::Kernel;
  r.deviceType = DeviceType::CUDA;
  r.correlation = correlation;
  r.deviceId = deviceId_;
  r.streamId = streamIndex(stream);
  r.startNs = startNs;
  r.endNs = endNs;
  r.name = name;
  for (int i = 0; i < 3; ++i) r.grid[i] = grid[i], r.block[i] = block[i];
  Profiler::instance().onRecord(r, TimeSource::DeviceTimer);
}

uint64_t TimerRing::claimCaptured(uint64_t stream, uint64_t now) {
  // The pointer stays in the graph for every replay: a descriptor of its own, not a ring slot.
  uint32_t index = 0;
  const uint64_t tagged = graphs_ ? graphs_->claim(stream, GraphReplays::currentLabel(), index) : 0;  // no area: untimed
  if (!tagged) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.captured;
    return 0;
  }
  // The capture context, as for a CUPTI launch that creates a graph node.
  announceOrDefer(GraphArea::correlationOf(index), now, GraphArea::nodeKeyOf(index));
  return tagged | kSlotMark;
}

uint64_t TimerRing::frontierLocked(uint64_t now, bool all) {
  uint64_t frontier = next_;
  if (all) return frontier;
  for (auto& [tid, entry] : threads_) {
    if (!entry.pending) continue;
    if (now - entry.claimNs > kQueuedAfterNs) {
      entry.pending = 0;  // long queued
      continue;
    }
    if (entry.pending - 1 < frontier) frontier = entry.pending - 1;
  }
  return frontier;
}

void TimerRing::scheduleLocked(uint64_t upTo) {
  if (upTo <= scheduled_) return;
  Readback readback{scheduled_, upTo, {}};
  device_->waitForStreams(streams_);
  for (uint64_t s = scheduled_; s < upTo;) {
    const uint32_t first = uint32_t(s % slots_);
    const uint32_t count = uint32_t(std::min<uint64_t>(upTo - s, slots_ - first));  // wraps: two copies
    readback.fences.push_back(device_->copyAndZero(first, count));
    s += count;
  }
  scheduled_ = upTo;
  ++stats_.readbacks;
  queue_.push_back(std::move(readback));
  workCv_.notify_one();
}

void TimerRing::markQueuedLocked() {
  // The calling thread is back from its latest launch call: that launch is queued.
  auto it = threads_.find(currentTid());
  if (it != threads_.end()) it->second.pending = 0;
}

void TimerRing::awaitRoom() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_ - freed_ < slots_) return;
  ++stats_.backpressure;
  markQueuedLocked();
  // The oldest slots must be read back before they are reused: schedule what is known to be
  // queued (everything before this thread's next claim when one thread launches), then wait.
  scheduleLocked(frontierLocked(monotonicNs(), false));
  if (scheduled_ <= freed_) scheduleLocked(next_);  // every other thread has a claim in flight
  freedCv_.wait(lock, [&] { return next_ - freed_ < slots_; });
}

void TimerRing::kick() {
  std::lock_guard<std::mutex> lock(mutex_);
  markQueuedLocked();
  scheduleLocked(frontierLocked(monotonicNs(), false));
}

void TimerRing::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  scheduleLocked(frontierLocked(0, true));
  for (auto& [tid, entry] : threads_) entry.pending = 0;
  const uint64_t target = scheduled_;
  freedCv_.wait(lock, [&] { return freed_ >= target; });
  const ClockMap clock = clock_;
  lock.unlock();
  if (graphs_) graphs_->readBack(clock, deviceId_);
}

void TimerRing::countOtherDevice() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.otherDevice;
}

RingStats TimerRing::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  RingStats s = stats_;
  s.idle = idle_.load(std::memory_order_relaxed);
  return s;
}

GraphStats TimerRing::graphStats() { return graphs_ ? graphs_->stats() : GraphStats{}; }

uint32_t TimerRing::graphRecords() const { return graphs_ ? graphs_->records() : 0; }

void TimerRing::setClock(ClockMap clock) {
  std::lock_guard<std::mutex> lock(mutex_);
  clock_ = clock;
}

uint16_t TimerRing::streamIndex(uint64_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  return streamIndexLocked(stream);
}

void TimerRing::noteGraphReplay(uint32_t label, uint64_t stream) {
  if (graphs_ && label) graphs_->noteReplay(label, streamIndex(stream), monotonicNs());
}

uint32_t TimerRing::graphNodes(uint32_t label) { return graphs_ ? graphs_->graphNodes(label) : 0; }

ClockMap TimerRing::clock() {
  std::lock_guard<std::mutex> lock(mutex_);
  return clock_;
}

void TimerRing::work() {
  for (;;) {
    Readback readback;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      workCv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      readback = std::move(queue_.front());
      queue_.pop_front();
    }
    for (void* fence : readback.fences) device_->waitFence(fence);
    deliver(readback.first, readback.last);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      freed_ = readback.last;
    }
    freedCv_.notify_all();
  }
}

void TimerRing::deliver(uint64_t first, uint64_t last) {
  const uint8_t* mirror = device_->hostMirror();
  Profiler& profiler = Profiler::instance();
  ClockMap clock;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    clock = clock_;
  }
  SlotDecode counts;
  for (uint64_t seq = first; seq < last; ++seq) {
    const uint32_t slot = uint32_t(seq % slots_);
    const SlotInfo info = info_[slot];
    PendingLaunch launch{};
    const SlotLaunches::Taken taken = launches_.take(seq, launch);
    DeviceRecord r;
    if (!decodeSlot(mirror + uint64_t(slot) * kTimerSlotBytes, planeBytes(), clock, r, counts)) {
      if (taken == SlotLaunches::Taken::Mapped) profiler.forgetLaunch(info.correlation);
      if (taken == SlotLaunches::Taken::Found) delete launch.meta;
      continue;
    }
    r.correlation = info.correlation;
    r.deviceId = deviceId_;
    r.streamId = info.stream;
    if (taken == SlotLaunches::Taken::Mapped) {
      profiler.onRecord(r, TimeSource::DeviceTimer);
    } else {
      profiler.deliverRecord(r, TimeSource::DeviceTimer, taken == SlotLaunches::Taken::Found, launch);
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.delivered += counts.delivered;
  stats_.untimed += counts.untimed;
  stats_.unknownKernels += counts.unknown;
}

}  // namespace ftp
