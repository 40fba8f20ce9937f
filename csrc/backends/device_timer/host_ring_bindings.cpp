// The device timer's CPU stand-in (the testing submodule, built with FLAGTREE_PROFILER_TESTING):
// the same ring over host memory (HostRingDevice), and what a stamped kernel's blocks and warps do
// to a ring slot, as ptx_stamps.py has them do it on the device. What they do to a graph
// descriptor the tests run from the stamps' own PTX (tests/support/stamped_kernel.py).
#ifdef FLAGTREE_PROFILER_TESTING
#include <nanobind/nanobind.h>
#include <nanobind/stl/tuple.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "backends/device_timer/device_timer_route.h"
#include "backends/device_timer/graph_area.h"
#include "backends/device_timer/slot_launches.h"
#include "backends/device_timer/timer_ring.h"
#include "bindings/bindings.h"

namespace ftp {
namespace {

// The CPU stand-in: "device" memory is host memory; copies happen when queued, and fences can
// be held back by the test (a device that has not got there yet).
class HostRingDevice : public RingDevice {
 public:
  explicit HostRingDevice(uint32_t slots)
      : plane_(uint64_t(slots) * kTimerSlotBytes), memory_(plane_ * kTimerPlanes), mirror_(plane_ * kTimerPlanes) {}
  uint64_t deviceBase() override { return reinterpret_cast<uint64_t>(memory_.data()); }
  const uint8_t* hostMirror() override { return mirror_.data(); }
  Where onRingDevice() override { return kYes; }
  bool capturing(uint64_t stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return capturing_.count(stream) != 0;
  }
  void waitForStreams(std::vector<uint64_t>& streams) override { streamWaits_ += streams.size(); }
  void* copyAndZero(uint32_t first, uint32_t count) override {
    for (uint32_t plane = 0; plane < kTimerPlanes; ++plane) {
      const uint64_t offset = plane * plane_ + uint64_t(first) * kTimerSlotBytes;
      std::memcpy(mirror_.data() + offset, memory_.data() + offset, uint64_t(count) * kTimerSlotBytes);
      std::memset(memory_.data() + offset, 0, uint64_t(count) * kTimerSlotBytes);
    }
    return nullptr;
  }
  void waitFence(void*) override {
    std::unique_lock<std::mutex> lock(mutex_);
    released_.wait(lock, [&] { return !held_; });
  }
  void hold(bool on) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_ = on;
    }
    released_.notify_all();
  }
  void setCapturing(uint64_t stream, bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (on) capturing_.insert(stream); else capturing_.erase(stream);
  }
  uint64_t allocGraphChunk(uint64_t bytes) override {
    chunks_.emplace_back(new uint8_t[bytes + 256]());
    return (reinterpret_cast<uint64_t>(chunks_.back().get()) + 255) & ~uint64_t(255);
  }
  bool syncDevice() override {
    ++syncs_;
    return !syncFails_;
  }
  void readDevice(uint64_t address, void* host, uint64_t bytes) override {
    std::memcpy(host, reinterpret_cast<const void*>(address), bytes);
  }
  uint64_t streamWaits_ = 0, syncs_ = 0;
  bool syncFails_ = false;

 private:
  uint64_t plane_;
  std::vector<uint8_t> memory_, mirror_;
  std::mutex mutex_;
  std::condition_variable released_;
  bool held_ = false;
  std::set<uint64_t> capturing_;
  std::vector<std::unique_ptr<uint8_t[]>> chunks_;
};

TimerRing& ring() {
  TimerRing* ring = deviceTimerRing();
  if (!ring) throw std::runtime_error("no host ring");
  return *ring;
}

HostRingDevice& hostOrThrow() {
  if (!deviceTimerHost()) throw std::runtime_error("no host ring");
  return *static_cast<HostRingDevice*>(deviceTimerHost());
}

// The slots' launch store under a launching thread and a worker running at once, as the ring
// drives it: the launching thread claims launch n once the worker has taken launch n - slots,
// and publishes it after `delay` spins every `every` launches; the worker takes each launch once
// claimed, without waiting for its publish. Every launch must come out whole (Found, its own
// thread id and metadata) or be abandoned on both sides (Unknown, its publish refused).
nb::dict slotLaunchesRace(uint32_t slots, uint32_t launches, uint32_t every, uint32_t delay) {
  SlotLaunches store(slots);
  std::atomic<uint64_t> claimedUpTo{0}, takenUpTo{0};
  uint64_t published = 0, refused = 0;
  std::thread launcher([&] {
    for (uint64_t seq = 0; seq < launches; ++seq) {
      while (seq >= takenUpTo.load(std::memory_order_acquire) + slots) std::this_thread::yield();
      store.claimed(seq, false);
      claimedUpTo.store(seq + 1, std::memory_order_release);
      if (every && seq % every == 0) {
        for (volatile uint32_t i = 0; i < delay; i = i + 1) {
        }
      }
      PendingLaunch launch{seq, new LaunchMetadata{uint32_t(seq), {}}, uint32_t(seq), 0, {}, 1, false};
      (store.publish(seq, launch) ? published : refused) += 1;
    }
  });
  uint64_t found = 0, unknown = 0, torn = 0;
  for (uint64_t seq = 0; seq < launches; ++seq) {
    while (claimedUpTo.load(std::memory_order_acquire) <= seq) std::this_thread::yield();
    PendingLaunch out;
    const SlotLaunches::Taken taken = store.take(seq, out);
    if (taken == SlotLaunches::Taken::Found) {
      ++found;
      if (out.tid != uint32_t(seq) || out.launchNs != seq || !out.meta || out.meta->name != uint32_t(seq)) ++torn;
      delete out.meta;
    } else {
      ++unknown;
    }
    takenUpTo.store(seq + 1, std::memory_order_release);
  }
  launcher.join();
  nb::dict d;
  d["found"] = found;
  d["unknown"] = unknown;
  d["torn"] = torn;
  d["published"] = published;
  d["refused"] = refused;
  return d;
}

// One launch number per step of the store's protocol, for its outcomes one by one.
nb::dict slotLaunchesSteps() {
  SlotLaunches store(2);
  nb::dict d;
  PendingLaunch out{};
  PendingLaunch ready{7, new LaunchMetadata{7, {}}, 7, 0, {}, 1, false};
  store.claimed(0, false);
  store.publish(0, ready);
  d["published_then_taken"] = int(store.take(0, out)) == int(SlotLaunches::Taken::Found) && out.tid == 7;
  delete out.meta;
  d["taken_twice"] = int(store.take(0, out));  // already taken: Unknown
  store.claimed(1, false);
  d["taken_before_its_publish"] = int(store.take(1, out));
  PendingLaunch late{9, new LaunchMetadata{9, {}}, 9, 0, {}, 1, false};
  d["publish_after_abandon"] = store.publish(1, late);
  store.claimed(2, true);
  d["mapped"] = int(store.take(2, out));
  store.claimed(3, false);
  PendingLaunch kept{3, new LaunchMetadata{3, {}}, 3, 0, {}, 1, false};
  d["publish_kept_at_destruction"] = store.publish(3, kept);  // freed by the store's destructor
  d["stale_launch_number"] = int(store.take(1, out));  // slot 1 now holds launch 3: not launch 1's
  return d;
}

}  // namespace

void registerDeviceTimerTesting(nb::module_& testing) {
  testing.def("slot_launches_race", &slotLaunchesRace, nb::arg("slots"), nb::arg("launches"), nb::arg("every"),
              nb::arg("delay"));
  testing.def("slot_launches_steps", &slotLaunchesSteps);
  testing.def("device_timer_host_ring", [](uint32_t slots, uint32_t batch, int64_t offsetNs, uint32_t graphRecords,
                                           uint32_t graphNodesPerChunk, uint32_t graphChunks) {
    startHostRing(std::make_unique<HostRingDevice>(slots), slots, batch, offsetNs,
                  GraphOptions{graphRecords, graphNodesPerChunk, graphChunks});
  }, nb::arg("slots"), nb::arg("batch"), nb::arg("offset_ns") = 0, nb::arg("graph_records") = 256,
     nb::arg("graph_nodes_per_chunk") = 64, nb::arg("graph_chunks") = 64);
  // The running ring's replay records per graph descriptor (what its stamps were built for).
  testing.def("device_timer_host_graph_records", [] { return ring().graphRecords(); });
  testing.def("device_timer_host_sync_fails", [](bool on) { hostOrThrow().syncFails_ = on; });
  testing.def("device_timer_host_syncs", [] { return hostOrThrow().syncs_; });
  // What a stamped kernel's blocks do to its slot (plane 0 address, marked): the leader of block
  // (0,0,0) stores the kernel id and geometry, block leaders and warps take the max of ~start and
  // end. Like the stamps, nothing is written through a pointer without the ring's mark.
  testing.def("device_timer_host_stamp", [](uint64_t slot, uint32_t lane, uint64_t start, uint64_t end) {
    if (!(slot & kSlotMark)) return;
    const uint64_t plane = ring().planeBytes();
    auto* words = reinterpret_cast<uint64_t*>((slot & ~kSlotMark) + (1 + lane % kTimerLanes) * plane);
    if (~start > words[0]) words[0] = ~start;
    if (end > words[1]) words[1] = end;
  });
  testing.def("device_timer_host_meta", [](uint64_t slot, uint32_t kernelId, std::tuple<uint32_t, uint32_t, uint32_t> grid,
                                            uint32_t block) {
    if (!(slot & kSlotMark)) return;
    uint32_t meta[4] = {kernelId, std::get<0>(grid), std::get<1>(grid) | std::get<2>(grid) << 16, block};
    std::memcpy(reinterpret_cast<void*>(slot & ~kSlotMark), meta, sizeof meta);
  });
  testing.def("device_timer_host_hold", [](bool on) { hostOrThrow().hold(on); });
  testing.def("device_timer_host_capturing", [](uint64_t stream, bool on) { hostOrThrow().setCapturing(stream, on); });
  testing.def("device_timer_host_stream_waits", [] {
    return deviceTimerHost() ? static_cast<HostRingDevice*>(deviceTimerHost())->streamWaits_ : 0;
  });
  registerEventLaunchTesting(testing);
  registerGraphWalkTesting(testing);
}
}  // namespace ftp
#endif  // FLAGTREE_PROFILER_TESTING
