// backend="device_timer": the ring as Python sees it. `device_timer_allocate` is installed as
// Triton's profile allocator, so a launch of a stamped kernel costs one call into this module
// (no Python in between, no tensor: the slot's address goes back as an int). The testing
// submodule drives the same ring over host memory (host_ring_bindings.cpp), for the CPU tests.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstring>
#include <memory>
#include <mutex>

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
  }
  // Taken out under the GIL, which every claim holds through its publish: none is in flight.
  std::unique_ptr<TimerRing> ring = std::move(r.ring);
  {
    nb::gil_scoped_release unlocked;
    ring.reset();  // drains what was claimed since, stops the worker
  }
  r.cuda = nullptr;
  r.host = nullptr;
}

// Triton's profile allocator: (size, alignment, stream) -> address.
nb::object allocate(nb::handle size, nb::handle align, nb::handle stream) {
  Route& r = route();
  const uint64_t tag = nb::cast<uint64_t>(align);
  if (retiredTimerAlignTag(tag)) return nb::int_(0);
  if (tag != kTimerAlignTag) {
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
    nb::list retired;
    for (uint32_t tag : kRetiredTimerAlignTags) retired.append(tag);
    d["retired_align_tags"] = nb::tuple(retired);
    d["slot_mark"] = kSlotMark;
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

void startHostRing(std::unique_ptr<RingDevice> device, uint32_t slots, uint32_t batch, int64_t offsetNs,
                   const GraphOptions& graphs) {
  RingDevice* host = device.get();
  startRing(std::move(device), slots, batch, 0, offsetNs, graphs);
  route().host = host;
}


}  // namespace ftp
