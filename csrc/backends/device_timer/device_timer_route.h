// What the device timer's bindings share between their files: the started ring and its device
// (device_timer_bindings.cpp; its CPU stand-in in host_ring_bindings.cpp), the event-timed
// launches beside it (event_launch_bindings.cpp), and the listing of CUDA graphs' kernels
// (graph_walk_bindings.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "backends/device_timer/timer_ring.h"

namespace nanobind {
class module_;
class handle;
}

namespace ftp {

class CudaRingDevice;

TimerRing* deviceTimerRing();        // null when not started
CudaRingDevice* deviceTimerCuda();   // the ring's CUDA device; null in the CPU tests
RingDevice* deviceTimerHost();       // the CPU tests' host stand-in; null on CUDA
// The CPU tests' ring over host memory (host_ring_bindings.cpp): started as on CUDA, with
// `device` as its RingDevice (deviceTimerHost() from then on).
void startHostRing(std::unique_ptr<RingDevice> device, uint32_t slots, uint32_t batch, int64_t offsetNs,
                   const GraphOptions& graphs);
// A thread without a current context whose device is the ring's gets the ring's (primary)
// context current, as Triton's launcher would after the allocator; false: another device.
bool makeRingCurrent();
// A ring slot for a stamped launch on `stream` (a CUDA stream handle or None), as the profile
// allocator answers it: 0 where there is no ring, no active session or another device.
uint64_t claimRingSlot(nanobind::handle stream);
// Triton's launcher call, native, for kernels whose profile scratch is a ring slot (slot_launcher.cpp).
void registerSlotLauncher(nanobind::module_& m);
// Drains and frees the event-timed launches' events (before the ring goes).
void stopEventLaunches();
void registerEventLaunchBindings(nanobind::module_& m);
void registerEventLaunchTesting(nanobind::module_& testing);
// The kernel nodes of CUDA graphs (graph_walk_bindings.cpp).
void registerGraphWalkBindings(nanobind::module_& m);
void registerGraphWalkTesting(nanobind::module_& testing);

}  // namespace ftp
