// The nanobind layer, split by area: each register function adds one area's functions to the
// module `m`, and those only tests (and bench) call to `testing` (flagtree.profiler._native.testing).
// Bindings translate Python calls to the native core, nothing else.
#pragma once
#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "session/session.h"

namespace ftp {

namespace nb = nanobind;

// csrc/bindings/
void registerErrorsAndEnums(nb::module_& m);                     // errors_enums.cpp
void registerContextBindings(nb::module_& m, nb::module_& testing);  // context.cpp
void registerSessionBindings(nb::module_& m, nb::module_& testing);  // sessions.cpp
// Beside each backend: backends/<backend>/<backend>_bindings.cpp.
void registerNvidiaBindings(nb::module_& m, nb::module_& testing);
void registerRoctracerBindings(nb::module_& m);
void registerCountersBindings(nb::module_& m, nb::module_& testing);
void registerPcSamplingBindings(nb::module_& m, nb::module_& testing);
void registerInstrumentationBindings(nb::module_& m, nb::module_& testing);
void registerDeviceTimerBindings(nb::module_& m, nb::module_& testing);  // backends/device_timer/
void registerDumpBindings(nb::module_& m);  // dump/dump_bindings.cpp
void registerInheritanceBindings(nb::module_& m);  // context/inheritance_bindings.cpp
void registerLaunchLogBindings(nb::module_& m);  // data/launch_log_bindings.cpp
void registerViewerBindings(nb::module_& m);  // viewer/tree_reader.cpp
void registerViewerWalkBindings(nb::module_& m);  // viewer/tree_walks.cpp
void registerVendorTracerBindings(nb::module_& m);  // backends/activity/vendor_bindings.cpp (mthreads, cann)

// The facts of one GPU as Python sees them (`cuda_devices`, `musa_devices`): index, name, arch,
// SMs, clocks (kHz), bus width (bits). `Info` is a driver's device record with those fields.
template <typename Info>
nb::dict gpuFacts(const Info& d) {
  nb::dict info;
  info["index"] = d.index;
  info["name"] = d.name;
  info["arch"] = std::to_string(d.major * 10 + d.minor);
  info["num_sms"] = d.numSms;
  info["clock_rate"] = d.clockRateKhz;
  info["memory_clock_rate"] = d.memoryClockRateKhz;
  info["bus_width"] = d.busWidthBits;
  return info;
}

// The session in `slot`; ValueError when the slot is empty.
Session& sessionAt(int slot);

using MetricsIn = std::vector<std::pair<std::string, double>>;
// Metric names interned.
std::vector<std::pair<uint32_t, double>> metricIds(const MetricsIn& in);

}  // namespace ftp
