// What the device timer's bindings share between their files: the started ring and its device
// (device_timer_bindings.cpp), the event-timed launches beside it (event_launch_bindings.cpp), and
// the listing of CUDA graphs' kernels (graph_walk_bindings.cpp).
#pragma once

namespace nanobind {
class module_;
}

namespace ftp {

class TimerRing;
class RingDevice;
class CudaRingDevice;

TimerRing* deviceTimerRing();        // null when not started
CudaRingDevice* deviceTimerCuda();   // the ring's CUDA device; null in the CPU tests
RingDevice* deviceTimerHost();       // the CPU tests' host stand-in; null on CUDA
// A thread without a current context whose device is the ring's gets the ring's (primary)
// context current, as Triton's launcher would after the allocator; false: another device.
bool makeRingCurrent();
// Drains and frees the event-timed launches' events (before the ring goes).
void stopEventLaunches();
void registerEventLaunchBindings(nanobind::module_& m);
void registerEventLaunchTesting(nanobind::module_& testing);
// The kernel nodes of CUDA graphs (graph_walk_bindings.cpp).
void registerGraphWalkBindings(nanobind::module_& m);
void registerGraphWalkTesting(nanobind::module_& testing);

}  // namespace ftp
