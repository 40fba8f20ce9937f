// Names, clocks and loaded libraries (`_native.core`); the shadow context and states of the
// calling thread and launch metadata (`_native.context`).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
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

ScopeMetrics scopeMetrics(const MetricsIn& sums, const PropertiesIn& properties) {
  ScopeMetrics out;
  out.sums = metricIds(sums);
  out.properties.reserve(properties.size());
  for (const auto& p : properties) {
    Property property{intern(p.first), false, 0.0, {}};
    if (const auto* text = std::get_if<std::string>(&p.second)) {
      property.isText = true;
      property.text = *text;
    } else {
      property.number = std::get<double>(p.second);
    }
    out.properties.push_back(std::move(property));
  }
  return out;
}

namespace {

void setLaunchMetadata(std::optional<std::string> name, const MetricsIn& metrics) {
  auto* meta = new LaunchMetadata();
  if (name) meta->name = intern(*name);
  meta->metrics = metricIds(metrics);
  Profiler::instance().setLaunchMetadata(meta);
}

// A count many threads add to without a lock: the steps of an armed trigger (trigger.py) and of
// a schedule (schedule_steps.py), whose step() on the program's hot path would otherwise take
// one. tick() returns the count before its own add, so each value goes to exactly one caller;
// tick_below() adds only while the count after it stays under `limit` (the step at which the
// schedule has something to do), so that no caller passes the limit without the lock.
constexpr uint64_t kNoStepLimit = UINT64_MAX;

struct StepCount {
  std::atomic<uint64_t> value{0};
  std::atomic<uint64_t> limit{kNoStepLimit};

  bool tickBelow() {
    uint64_t now = value.load(std::memory_order_relaxed);
    while (now + 1 < limit.load(std::memory_order_acquire)) {
      if (value.compare_exchange_weak(now, now + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }
};

}  // namespace

void registerCoreBindings(nb::module_& m) {
  nb::class_<StepCount>(m, "StepCount")
      .def(nb::init<>())
      .def("tick", [](StepCount& c) { return c.value.fetch_add(1, std::memory_order_relaxed); })
      .def("tick_below", &StepCount::tickBelow)
      .def_prop_ro("value", [](const StepCount& c) { return c.value.load(std::memory_order_relaxed); })
      .def_prop_rw(
          "limit", [](const StepCount& c) { return c.limit.load(std::memory_order_relaxed); },
          [](StepCount& c, uint64_t limit) { c.limit.store(limit, std::memory_order_release); })
      .def_ro_static("NO_LIMIT", &kNoStepLimit);
  m.def("intern", [](const std::string& s) { return intern(s); });
  m.def("monotonic_ns", &monotonicNs);
  m.def("realtime_ns", &realtimeNs);
  // backends/libraries.py loaded_library: a vendor library already in the process.
  m.def("loaded_library_path", [](const std::string& prefix) -> nb::object {
    std::string path = loadedLibraryPath(prefix);
    if (path.empty()) return nb::none();
    return nb::str(path.c_str());
  });
}

void registerContextBindings(nb::module_& m) {
  m.def("python_frames_skip", &setExtraInternalFiles, nb::arg("fragments"));
  // Shadow context and states. scope.py's scopes are Scope objects (scope_type.cpp); scope_enter
  // and scope_exit are the bare calls, for NVTX ranges taken as scopes.
  m.def("scope_enter", [](uint32_t name) { Profiler::instance().enterScope(name, {}); });
  m.def("scope_exit", [](bool cpuTimed) { Profiler::instance().exitScope(cpuTimed); }, nb::arg("cpu_timed") = false);
  registerScopeType(m);
  m.def("state_push", [](uint32_t name) { Profiler::instance().pushState(name); });
  m.def("state_pop", []() { Profiler::instance().popState(); });
  m.def("set_launch_metadata", &setLaunchMetadata);
  m.def("clear_launch_metadata", []() { Profiler::instance().setLaunchMetadata(nullptr); });
}

#ifdef FLAGTREE_PROFILER_TESTING
void registerContextTesting(nb::module_& testing) {
  testing.def("scope_depth", []() { return threadState().scopes.size(); });
}
#endif

}  // namespace ftp
