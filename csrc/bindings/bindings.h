// The nanobind layer, split by area: each register function adds one area's functions to its
// submodule of _native; the areas' functions only tests (and bench) call go to `testing`
// (flagtree.profiler._native.testing), in builds with the CMake option FLAGTREE_PROFILER_TESTING.
// Bindings translate Python calls to the native core, nothing else.
#pragma once
#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "session/session.h"

namespace ftp {

namespace nb = nanobind;

// csrc/bindings/, each area into its submodule of _native (bindings.cpp).
void registerErrorsAndEnums(nb::module_& m);            // errors_enums.cpp: the top module
void registerCoreBindings(nb::module_& core);           // context.cpp
void registerLaunchDoor(nb::module_& core);             // launch_door.cpp: CompiledKernel.run's door
void registerContextBindings(nb::module_& context);     // context.cpp
void registerInheritanceBindings(nb::module_& context); // inheritance.cpp
void registerScopeType(nb::module_& context);           // scope_type.cpp: Scope, scope.py's base
void registerSessionBindings(nb::module_& session);     // sessions.cpp
void registerLaunchLogBindings(nb::module_& session);   // launch_log.cpp
void registerDumpBindings(nb::module_& dump);           // dump.cpp
// Beside each backend: backends/<backend>/<backend>_bindings.cpp, into _native.<backend>.
void registerNvidiaBindings(nb::module_& m);
void registerRoctracerBindings(nb::module_& m);
void registerMthreadsBindings(nb::module_& m);
void registerCannBindings(nb::module_& m);
void registerCountersBindings(nb::module_& m);
void registerPcSamplingBindings(nb::module_& m);
void registerInstrumentationBindings(nb::module_& m);
void registerDeviceTimerBindings(nb::module_& m);
// The viewer's (viewer/tree_reader.cpp, viewer/tree_walks.cpp), into _native.viewer.
void registerViewerBindings(nb::module_& m);
void registerViewerWalkBindings(nb::module_& m);

#ifdef FLAGTREE_PROFILER_TESTING
// `_native.testing`, each beside its area's register function above.
void registerContextTesting(nb::module_& testing);
void registerSessionTesting(nb::module_& testing);
void registerNvidiaTesting(nb::module_& testing);
void registerCountersTesting(nb::module_& testing);
void registerPcSamplingTesting(nb::module_& testing);
void registerInstrumentationTesting(nb::module_& testing);
void registerDeviceTimerTesting(nb::module_& testing);
#endif

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

// Scope properties as scope.py's _metric_items gives them: (name without its suffix, number or text).
using PropertiesIn = std::vector<std::pair<std::string, std::variant<double, std::string>>>;
// A scope's sums and properties, names interned.
ScopeMetrics scopeMetrics(const MetricsIn& sums, const PropertiesIn& properties);

// Leaves the calling thread's innermost scope, adding `sums` and `properties` to it first
// (inheritance.cpp). Returns the id of the scope left, kNoScope when none was open, so that the
// caller can tell a with-block that leaves someone else's scope.
constexpr uint32_t kNoScope = UINT32_MAX;
uint32_t exitScopeChecked(bool cpuTimed, const MetricsIn& sums, const PropertiesIn& properties);

}  // namespace ftp
