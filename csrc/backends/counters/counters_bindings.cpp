// Python bindings of the hardware-counter backend: flagtree.profiler._native.counters_*.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "backends/counters/counter_collector.h"
#include "backends/counters/counters_api.h"
#include "backends/counters/metric_host.h"
#include "bindings/bindings.h"

namespace ftp {

namespace {

nb::list listMetrics(const std::string& path, std::optional<std::string> chip, bool submetrics) {
  const CountersApi& api = CountersApi::load(path);
  std::vector<MetricInfo> metrics;
  api.acquireProfiler();
  try {
    MetricHost host(api, chip ? *chip : chipOfDevice(api, 0), {});
    metrics = host.list(submetrics);
  } catch (...) {
    api.releaseProfiler();
    throw;
  }
  api.releaseProfiler();
  nb::list out;
  for (const MetricInfo& m : metrics) {
    nb::dict d;
    d["name"] = m.name;
    d["type"] = m.type;
    d["unit"] = m.unit;
    d["description"] = m.description;
    if (submetrics) d["submetrics"] = m.submetrics;
    out.append(d);
  }
  return out;
}

nb::dict stats() {
  CounterStats s = CounterCollector::instance().stats();
  nb::dict d;
  d["passes"] = s.passes;
  d["ranges_collected"] = s.rangesCollected;
  d["ranges_dropped"] = s.rangesDropped;
  d["launches_without_range"] = s.launchesWithoutRange;
  d["ranges_without_launch"] = s.rangesWithoutLaunch;
  d["range_name_mismatches"] = s.nameMismatches;
  d["decodes"] = s.decodes;
  d["errors"] = s.errors;
  return d;
}

}  // namespace

void registerCountersBindings(nb::module_& m) {
  m.def("counters_load", [](const std::string& path) { CountersApi::load(path); },
        "Loads the Profiler Host / Range Profiler table from libcupti at `path` (RuntimeError if too old).");
  m.def("counters_chip", [](const std::string& path, size_t device) {
    const CountersApi& api = CountersApi::load(path);
    api.acquireProfiler();
    std::string chip;
    try {
      chip = chipOfDevice(api, device);
    } catch (...) {
      api.releaseProfiler();
      throw;
    }
    api.releaseProfiler();
    return chip;
  });
  m.def("counters_list_metrics", &listMetrics, nb::arg("path"), nb::arg("chip").none(),
        nb::arg("submetrics") = false);
  m.def("counters_current_context", &currentContext);
  m.def("counters_add_session",
        [](const std::string& path, int slot, const std::vector<std::string>& metrics, size_t maxRanges,
           std::vector<double> peaks, uintptr_t context, int device) {
          if (device < 0) device = deviceOfCurrentContext();
          CounterCollector::instance().addSession(CountersApi::load(path), slot, metrics, maxRanges,
                                                  std::move(peaks), reinterpret_cast<CUcontext>(context), device);
        });
  m.def("counters_remove_session", [](int slot) { CounterCollector::instance().removeSession(slot); });
  m.def("counters_flush", [] {
    nb::gil_scoped_release release;
    CounterCollector::instance().flush();
  });
  m.def("counters_stats", &stats);
  m.def("counters_mean_metrics", [] { return CounterCollector::instance().meanMetrics(); });
}

#ifdef FLAGTREE_PROFILER_TESTING
void registerCountersTesting(nb::module_& testing) {
  testing.def("counters_is_additive", [](const std::string& name, const std::string& type) {
    return isAdditiveMetric(name, type == "counter" ? CUPTI_METRIC_TYPE_COUNTER : CUPTI_METRIC_TYPE_RATIO);
  });
  testing.def("counters_is_kernel_launch_api", [](const std::string& name) { return isKernelLaunchApi(name.c_str()); });
  // The launch path (the CUPTI launch callbacks call the same functions); exposed so that CPU
  // tests drive it with a stand-in libcupti.
  testing.def("counters_on_launch_enter", [](uintptr_t context, uint32_t correlation, const std::string& kernel,
                                       uint32_t slots) {
    CounterCollector::instance().onLaunchEnter(reinterpret_cast<CUcontext>(context), correlation,
                                               kernel.c_str(), slots);
  });
  testing.def("counters_on_launch_exit", [](uintptr_t context, uint32_t correlation) {
    CounterCollector::instance().onLaunchExit(reinterpret_cast<CUcontext>(context), correlation);
  });
}
#endif

}  // namespace ftp
