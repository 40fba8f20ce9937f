// backend="instrumentation": which CUPTI correlation id the launch a thread just made got.
// Instrumented kernels' scope results are joined to their kernel's activity record by that id;
// the Triton launch-exit hook (same thread, right after the launch call) reads it here.
#include <nanobind/nanobind.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "backends/nvidia/cupti_tracer.h"
#include "bindings/bindings.h"

namespace ftp {
namespace {

thread_local uint32_t lastLaunchCorrelation = 0;

struct LaunchCorrelationObserver : TracerObserver {
  void onLaunchEnter(uint32_t correlation, uint32_t, const void*) override {
    lastLaunchCorrelation = correlation;
  }
};

LaunchCorrelationObserver observer;
std::mutex watchMutex;
int watchers = 0;  // instrumentation sessions wanting correlations (observer registered while > 0)

void watchLaunches(bool on) {
  std::lock_guard<std::mutex> lock(watchMutex);
  if (on && watchers++ == 0) CuptiTracer::instance().addObserver(&observer);
  if (!on && watchers > 0 && --watchers == 0) CuptiTracer::instance().removeObserver(&observer);
}

// The correlation of this thread's latest launch since the last call, 0 if none.
uint32_t takeLastCorrelation() {
  uint32_t correlation = lastLaunchCorrelation;
  lastLaunchCorrelation = 0;
  return correlation;
}

}  // namespace

void registerInstrumentationBindings(nb::module_& m) {
  m.def("instrumentation_watch_launches", &watchLaunches, nb::arg("on"));
  m.def("instrumentation_take_correlation", &takeLastCorrelation);
}

#ifdef FLAGTREE_PROFILER_TESTING
void registerInstrumentationTesting(nb::module_& testing) {
  // For CPU tests: what the tracer's launch callback does, without CUPTI.
  testing.def("instrumentation_launch", [](uint32_t correlation) { lastLaunchCorrelation = correlation; });
}
#endif

}  // namespace ftp
