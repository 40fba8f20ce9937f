// backend="device_timer": the ring as Python sees it. `device_timer_allocate` is installed as
// Triton's profile allocator, so a launch of a stamped kernel costs one call into this module
// (no Python in between, no tensor: the slot's address goes back as an int). The testing
// submodule (built with FLAGTREE_PROFILER_TESTING) drives the same ring over host memory
// (HostRingDevice), for the CPU tests.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "backends/device_timer/cuda_ring_device.h"
#include "backends/device_timer/device_timer_route.h"
#include "backends/device_timer/graph_area.h"
#include "backends/device_timer/scoped_launches.h"
#include "backends/device_timer/timer_ring.h"
#include "bindings/bindings.h"
#include "core/strings.h"
#include "session/profiler.h"

namespace ftp {
namespace {

struct Route {
  std::mutex mutex;
  std::unique_ptr<TimerRing> ring;
  CudaRingDevice* cuda = nullptr;  // owned by ring, when on CUDA
  RingDevice* host = nullptr;      // owned by ring, in CPU tests (the testing build's stand-in)
  nb::object fallback;             // the profile allocator before ours
  nb::object threadDevice;         // () -> the calling thread's device ordinal (Triton's driver)
};

Route& route() {
  static auto* r = new Route();  // leaked: the ring's worker may outlive module teardown
  return *r;
}

TimerRing& ringOrThrow() {
  TimerRing* ring = route().ring.get();
  if (!ring) throw std::runtime_error("backend 'device_timer': the ring is not started");
  return *ring;
}

nb::dict statsDict(const RingStats& s, const GraphStats& g) {
  nb::dict d;
  d["launches"] = s.claimed;
  d["records"] = s.delivered + g.replays;
  d["untimed"] = s.untimed;
  d["backpressure_waits"] = s.backpressure;
  d["readbacks"] = s.readbacks;
  d["captured_untimed"] = s.captured;
  d["other_device_untimed"] = s.otherDevice;
  d["unknown_kernels"] = s.unknownKernels + g.unknown;
  d["idle_launches"] = s.idle;
  d["graph_nodes"] = g.nodes;
  d["graph_replays_timed"] = g.replays;
  d["graph_replays_lost"] = g.lost;
  d["graph_replays_untimed"] = g.untimed;
  d["graph_readbacks"] = g.readbacks;
  d["graph_readbacks_skipped"] = g.skipped;
  d["graph_replays_matched"] = g.matched;
  d["graph_replays_unmatched"] = g.unmatched;
  return d;
}

// The probe's mapping of the global timer, with the host's real-time offset beside it (the
// global timer is close to CLOCK_REALTIME; how close is what `realtime_minus_probe_ns` says).
nb::dict clockDict(const ClockProbe& probe) {
  nb::dict d;
  d["offset_ns"] = probe.offsetNs;
  d["uncertainty_ns"] = probe.uncertaintyNs;
  d["lower_ns"] = probe.lowerNs;
  d["upper_ns"] = probe.upperNs;
  d["realtime_minus_probe_ns"] = CudaRingDevice::realtimeOffset().offsetNs - probe.offsetNs;
  return d;
}

ClockProbe probeNow() {
  nb::gil_scoped_release unlocked;
  return route().cuda->probeClock();
}

void startRing(std::unique_ptr<RingDevice> device, uint32_t slots, uint32_t batch, uint32_t deviceId,
               int64_t offsetNs, GraphOptions graphs) {
  Route& r = route();
  if (r.ring) throw std::runtime_error("backend 'device_timer': the ring is already started");
  if (slots < 2 || batch < 1 || batch > slots) throw std::invalid_argument("device_timer: need 2 <= slots, 1 <= batch <= slots");
  // 0: no graph area (stamps without a graph path: captured launches get no slot, counted).
  if (graphs.records == 1 || (graphs.records & (graphs.records - 1)))
    throw std::invalid_argument("device_timer: graph replay records must be 0 or a power of two >= 2");
  r.ring = std::make_unique<TimerRing>(std::move(device), slots, batch, deviceId, ClockMap{offsetNs}, graphs);
}

void freeRing() {
  Route& r = route();
  if (!r.ring) return;
  {
    nb::gil_scoped_release unlocked;
    stopEventLaunches();  // its events live in the ring's context
    r.ring->drain();
    r.ring.reset();
  }
  r.cuda = nullptr;
  r.host = nullptr;
}

// Triton's profile allocator: (size, alignment, stream) -> address.
nb::object allocate(nb::handle size, nb::handle align, nb::handle stream) {
  Route& r = route();
  if (nb::cast<uint64_t>(align) != kTimerAlignTag) {
    if (!r.fallback.is_valid()) throw std::runtime_error("device_timer: no profile allocator for this kernel");
    return r.fallback(size, align, stream);
  }
  return nb::int_(claimRingSlot(stream));
}

}  // namespace

uint64_t claimRingSlot(nb::handle stream) {
  // A stamped kernel launched with no ring (its route taken down, the allocator left in place:
  // triton_glue/kernels.py says why): a null slot, which the stamps skip.
  TimerRing* ring = route().ring.get();
  if (!ring) return 0;
  const uint64_t handle = stream.is_none() ? 0 : nb::cast<uint64_t>(stream);
  uint64_t address = ring->claim(handle);
  if (address == TimerRing::kNoContext) {
    // A thread's first launch: Triton makes the device's primary context current after us.
    if (makeRingCurrent()) {
      address = ring->claim(handle);
    } else {
      ring->countOtherDevice();
      address = 0;
    }
  }
  while (address == TimerRing::kFull) {
    {
      nb::gil_scoped_release unlocked;  // the worker may need a while; other threads go on
      ring->awaitRoom();
    }
    address = ring->claim(handle);
  }
  return address;
}

TimerRing* deviceTimerRing() { return route().ring.get(); }
CudaRingDevice* deviceTimerCuda() { return route().cuda; }
RingDevice* deviceTimerHost() { return route().host; }

bool makeRingCurrent() {
  Route& r = route();
  if (!(r.cuda && r.threadDevice.is_valid() && nb::cast<int>(r.threadDevice()) == r.cuda->deviceOrdinal())) return false;
  r.cuda->makeCurrent();
  return true;
}

void registerDeviceTimerBindings(nb::module_& m) {
  m.def("device_timer_layout", [] {
    nb::dict d;
    d["lanes"] = kTimerLanes;
    d["slot_bytes"] = kTimerSlotBytes;
    d["graph_tag"] = kGraphTag;
    d["graph_header_bytes"] = kGraphHeaderBytes;
    d["graph_record_bytes"] = kGraphRecordBytes;
    d["align_tag"] = kTimerAlignTag;
    return d;
  });
  m.def("device_timer_kernel_id", [](const std::string& name) { return TimerRing::kernelId(name.data(), name.size()); });
  m.def("device_timer_name_kernel", [](const std::string& name) {
    const uint32_t id = TimerRing::kernelId(name.data(), name.size());
    TimerRing::nameKernel(id, intern(name));
    return id;
  });
  // Starts the ring on the current CUDA device, or keeps the one a previous session left (same
  // size) and measures the clock again; returns {device, offset_ns, uncertainty_ns}.
  m.def("device_timer_start", [](uint32_t slots, uint32_t batch, uint32_t graphRecords) {
    Route& r = route();
    if (!(r.ring && r.cuda && r.ring->slots() == slots && r.ring->batch() == batch &&
          r.ring->graphRecords() == graphRecords)) {
      if (r.ring) freeRing();
      auto device = std::make_unique<CudaRingDevice>(slots);
      CudaRingDevice* cuda = device.get();
      GraphOptions graphs;
      graphs.records = graphRecords;
      startRing(std::move(device), slots, batch, uint32_t(cuda->deviceOrdinal()), 0, graphs);
      r.cuda = cuda;
    }
    const ClockProbe probe = probeNow();
    r.ring->setClock(ClockMap{probe.offsetNs});
    nb::dict d = clockDict(probe);
    d["device"] = r.cuda->deviceOrdinal();
    return d;
  }, nb::arg("slots"), nb::arg("batch"), nb::arg("graph_records"));
  // The kept ring takes an offset probed shortly before (the previous session's finalize
  // check) instead of probing again at start (backends/device_timer/clock.py says when).
  m.def("device_timer_set_clock", [](int64_t offsetNs) { ringOrThrow().setClock(ClockMap{offsetNs}); },
        nb::arg("offset_ns"));
  m.def("device_timer_set_thread_device", [](nb::object fn) { route().threadDevice = std::move(fn); });
  // The clock probed again (finalize's check of the mapping measured at start).
  m.def("device_timer_check_clock", [] {
    if (!route().cuda) throw std::runtime_error("backend 'device_timer': the ring is not started on CUDA");
    return clockDict(probeNow());
  });
  m.def("device_timer_defer_launches", [](bool on) { ringOrThrow().deferLaunches(on); });
  m.def("device_timer_launch_done", &TimerRing::launchDone);
  m.def("device_timer_plane_bytes", [] { return ringOrThrow().planeBytes(); });
  m.def("device_timer_set_fallback", [](nb::object fallback) { route().fallback = std::move(fallback); });
  m.def("device_timer_fallback", [] { return route().fallback.is_valid() ? route().fallback : nb::none(); });
  m.def("device_timer_allocate", &allocate, nb::arg("size"), nb::arg("alignment"), nb::arg("stream"));
  registerSlotLauncher(m);
  m.def("device_timer_kick", [] {
    nb::gil_scoped_release unlocked;
    ringOrThrow().kick();
  });
  m.def("device_timer_drain", [] {
    nb::gil_scoped_release unlocked;
    ringOrThrow().drain();
  });
  m.def("device_timer_stats", [] {
    TimerRing& ring = ringOrThrow();
    return statsDict(ring.stats(), ring.graphStats());
  });
  // Launches of kernels with kernel-side scopes (scoped_launches.h): the id at launch exit, the
  // record at the scopes' drain, from the blocks' header stamps.
  m.def("device_timer_scoped_launch", &scopedLaunch, nb::arg("launch_ns"));
  m.def("device_timer_scoped_record", [](uint32_t correlation, const std::string& name, uint64_t start, uint64_t end,
                                         std::tuple<int32_t, int32_t, int32_t> grid,
                                         std::tuple<int32_t, int32_t, int32_t> block, uint64_t stream) {
    ScopedTimes t{correlation, intern(name), start, end,
                  {std::get<0>(grid), std::get<1>(grid), std::get<2>(grid)},
                  {std::get<0>(block), std::get<1>(block), std::get<2>(block)}, stream};
    scopedRecord(ringOrThrow(), t);
  }, nb::arg("correlation"), nb::arg("name"), nb::arg("start"), nb::arg("end"), nb::arg("grid"), nb::arg("block"),
     nb::arg("stream"));
  m.def("device_timer_forget_launch", [](uint32_t correlation) { Profiler::instance().forgetLaunch(correlation); });
  m.def("device_timer_running", [] { return route().ring != nullptr; });
  // CUDA graphs through torch (graph_replays.h): a capture's label on the calling thread, from
  // capture_begin to capture_end; each replay() noted before the graph is launched.
  m.def("device_timer_graph_capture_begin", &GraphReplays::beginCapture);
  m.def("device_timer_graph_capture_end", &GraphReplays::endCapture);
  m.def("device_timer_graph_replay", [](uint32_t label, uint64_t stream) {
    if (TimerRing* ring = route().ring.get()) ring->noteGraphReplay(label, stream);
  }, nb::arg("label"), nb::arg("stream"));
  // Descriptors a capture's launches claimed (0: none of them was timed, or no ring).
  m.def("device_timer_graph_nodes", [](uint32_t label) -> uint32_t {
    TimerRing* ring = route().ring.get();
    return ring ? ring->graphNodes(label) : 0;
  }, nb::arg("label"));
  // Drains and frees the ring (its device memory, pinned mirror, stream and worker).
  m.def("device_timer_free", [] { freeRing(); });
  registerEventLaunchBindings(m);
  registerGraphWalkBindings(m);
}

#ifdef FLAGTREE_PROFILER_TESTING
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

HostRingDevice& hostOrThrow() {
  if (!route().host) throw std::runtime_error("no host ring");
  return *static_cast<HostRingDevice*>(route().host);
}

// What a stamped kernel replayed from a graph does to its descriptor (the tagged pointer), as the
// tagged path of ptx_stamps.py does it: one block leader's entry, one warp's exit.
uint64_t* graphRecord(uint64_t tagged, uint64_t replay) {
  const uint64_t records = ringOrThrow().graphRecords();
  return reinterpret_cast<uint64_t*>((tagged & ~uint64_t(15)) + kGraphHeaderBytes + (replay & (records - 1)) * kGraphRecordBytes);
}

uint64_t blocksOf(std::tuple<uint32_t, uint32_t, uint32_t> grid) {
  return uint64_t(std::get<0>(grid)) * std::get<1>(grid) * std::get<2>(grid);
}

void graphEntry(uint64_t tagged, uint32_t kernelId, std::tuple<uint32_t, uint32_t, uint32_t> grid, uint32_t block,
                bool firstBlock, uint32_t lane, uint64_t start) {
  if (!(tagged & kGraphTag)) throw std::invalid_argument("not a graph descriptor");
  auto* tickets = reinterpret_cast<uint64_t*>(tagged & ~uint64_t(15));
  const uint64_t replay = tickets[0]++ / blocksOf(grid);
  uint64_t* record = graphRecord(tagged, replay);
  uint64_t& word = record[2 * (1 + lane % kTimerLanes)];
  if (~start > word) word = ~start;
  if (firstBlock) {
    uint32_t meta[4] = {kernelId, std::get<0>(grid), std::get<1>(grid) | std::get<2>(grid) << 16, block};
    std::memcpy(record, meta, sizeof meta);
  }
}

void graphExit(uint64_t tagged, std::tuple<uint32_t, uint32_t, uint32_t> grid, uint32_t block, uint32_t lane,
               uint64_t end) {
  auto* tickets = reinterpret_cast<uint64_t*>(tagged & ~uint64_t(15));
  const uint64_t perReplay = blocksOf(grid) * ((block + 31) / 32);
  const uint64_t ticket = tickets[1]++;
  const uint64_t replay = ticket / perReplay;
  uint64_t& word = graphRecord(tagged, replay)[2 * (1 + lane % kTimerLanes) + 1];
  if (end > word) word = end;
  if (ticket + 1 == (replay + 1) * perReplay) std::memset(graphRecord(tagged, replay + 1), 0, kGraphRecordBytes);
}

}  // namespace

void registerDeviceTimerTesting(nb::module_& testing) {
  testing.def("device_timer_host_ring", [](uint32_t slots, uint32_t batch, int64_t offsetNs, uint32_t graphRecords,
                                           uint32_t graphNodesPerChunk, uint32_t graphChunks) {
    auto device = std::make_unique<HostRingDevice>(slots);
    HostRingDevice* host = device.get();
    startRing(std::move(device), slots, batch, 0, offsetNs, GraphOptions{graphRecords, graphNodesPerChunk, graphChunks});
    route().host = host;
  }, nb::arg("slots"), nb::arg("batch"), nb::arg("offset_ns") = 0, nb::arg("graph_records") = 256,
     nb::arg("graph_nodes_per_chunk") = 64, nb::arg("graph_chunks") = 64);
  testing.def("device_timer_host_graph_entry", &graphEntry, nb::arg("tagged"), nb::arg("kernel_id"), nb::arg("grid"),
              nb::arg("block"), nb::arg("first_block"), nb::arg("lane"), nb::arg("start"));
  testing.def("device_timer_host_graph_exit", &graphExit, nb::arg("tagged"), nb::arg("grid"), nb::arg("block"),
              nb::arg("lane"), nb::arg("end"));
  testing.def("device_timer_host_sync_fails", [](bool on) { hostOrThrow().syncFails_ = on; });
  testing.def("device_timer_host_syncs", [] { return hostOrThrow().syncs_; });
  // What a stamped kernel's blocks do to its slot (plane 0 address): the leader of block (0,0,0)
  // stores the kernel id and geometry, block leaders and warps take the max of ~start and end.
  testing.def("device_timer_host_stamp", [](uint64_t slot, uint32_t lane, uint64_t start, uint64_t end) {
    const uint64_t plane = ringOrThrow().planeBytes();
    auto* words = reinterpret_cast<uint64_t*>(slot + (1 + lane % kTimerLanes) * plane);
    if (~start > words[0]) words[0] = ~start;
    if (end > words[1]) words[1] = end;
  });
  testing.def("device_timer_host_meta", [](uint64_t slot, uint32_t kernelId, std::tuple<uint32_t, uint32_t, uint32_t> grid,
                                            uint32_t block) {
    uint32_t meta[4] = {kernelId, std::get<0>(grid), std::get<1>(grid) | std::get<2>(grid) << 16, block};
    std::memcpy(reinterpret_cast<void*>(slot), meta, sizeof meta);
  });
  testing.def("device_timer_host_hold", [](bool on) { hostOrThrow().hold(on); });
  testing.def("device_timer_host_capturing", [](uint64_t stream, bool on) { hostOrThrow().setCapturing(stream, on); });
  testing.def("device_timer_host_stream_waits", [] { return route().host ? static_cast<HostRingDevice*>(route().host)->streamWaits_ : 0; });
  registerEventLaunchTesting(testing);
  registerGraphWalkTesting(testing);
}
#endif  // FLAGTREE_PROFILER_TESTING

}  // namespace ftp
