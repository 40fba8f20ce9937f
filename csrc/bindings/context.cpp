// Names, clocks, the shadow context and states of the calling thread, launch metadata, and the
// launches of host-side backends (the interpreter).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>

#include "bindings/bindings.h"
#include "context/python_frames.h"
#include "context/thread_state.h"
#include "core/clock.h"
#include "core/library.h"
#include "core/strings.h"
#include "session/profiler.h"

namespace ftp {

std::vector<std::pair<uint32_t, double>> metricIds(const MetricsIn& in) {
  std::vector<std::pair<uint32_t, double>> out;
  out.reserve(in.size());
  for (const auto& m : in) out.emplace_back(intern(m.first), m.second);
  return out;
}

namespace {

// Host-side launches (the interpreter backend) get correlation ids from their own range.
std::atomic<uint32_t> hostCorrelation{0x80000000u};

void recordHostKernel(const std::string& name, uint64_t startNs, uint64_t endNs,
                      std::tuple<int, int, int> grid, std::tuple<int, int, int> block, int deviceType,
                      int deviceId, int streamId) {
  uint32_t corr = hostCorrelation.fetch_add(1);
  Profiler& p = Profiler::instance();
  p.onLaunch(corr, false, startNs);
  DeviceRecord r;
  r.kind = RecordKind::Kernel;
  r.deviceType = static_cast<DeviceType>(deviceType);
  r.correlation = corr;
  r.deviceId = deviceId;
  r.streamId = streamId;
  r.startNs = startNs;
  r.endNs = endNs;
  r.name = intern(name);
  r.grid[0] = std::get<0>(grid), r.grid[1] = std::get<1>(grid), r.grid[2] = std::get<2>(grid);
  r.block[0] = std::get<0>(block), r.block[1] = std::get<1>(block), r.block[2] = std::get<2>(block);
  p.onRecord(r);
}

void setLaunchMetadata(std::optional<std::string> name, const MetricsIn& metrics) {
  auto* meta = new LaunchMetadata();
  if (name) meta->name = intern(*name);
  meta->metrics = metricIds(metrics);
  Profiler::instance().setLaunchMetadata(meta);
}

}  // namespace

void registerContextBindings(nb::module_& m) {
  m.def("python_frames_skip", &setExtraInternalFiles, nb::arg("fragments"));
  m.def("intern", [](const std::string& s) { return intern(s); });
  m.def("monotonic_ns", &monotonicNs);
  m.def("realtime_ns", &realtimeNs);
  // backends/libraries.py loaded_library: a vendor library already in the process.
  m.def("loaded_library_path", [](const std::string& prefix) -> nb::object {
    std::string path = loadedLibraryPath(prefix);
    if (path.empty()) return nb::none();
    return nb::str(path.c_str());
  });

  // Shadow context and states.
  m.def("scope_enter", [](uint32_t name) { Profiler::instance().enterScope(name, {}); });
  m.def("scope_enter_metrics", [](uint32_t name, const MetricsIn& metrics) {
    Profiler::instance().enterScope(name, metricIds(metrics));
  });
  m.def("scope_exit", [](bool cpuTimed) { Profiler::instance().exitScope(cpuTimed); }, nb::arg("cpu_timed") = false);
  m.def("state_push", [](uint32_t name) { Profiler::instance().pushState(name); });
  m.def("state_pop", []() { Profiler::instance().popState(); });
  m.def("set_launch_metadata", &setLaunchMetadata);
  m.def("clear_launch_metadata", []() { Profiler::instance().setLaunchMetadata(nullptr); });

  // Host-side backends (interpreter): one call per finished launch, context taken now.
  m.def("record_host_kernel", &recordHostKernel, nb::arg("name"), nb::arg("start_ns"), nb::arg("end_ns"),
        nb::arg("grid"), nb::arg("block"), nb::arg("device_type") = int(DeviceType::CPU),
        nb::arg("device_id") = 0, nb::arg("stream_id") = 0);
}

#ifdef FLAGTREE_PROFILER_TESTING
void registerContextTesting(nb::module_& testing) {
  testing.def("scope_depth", []() { return threadState().scopes.size(); });
}
#endif

}  // namespace ftp
