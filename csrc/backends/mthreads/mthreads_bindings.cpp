// Python bindings of the mthreads backend (Moore Threads): the MUPTI tracer (the shared dialect
// calls, "mupti_..."), the MUSA driver's device facts and the per-launch MUPTI metrics.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "backends/dialect/dialect_bindings.h"
#include "backends/mthreads/launch_metrics.h"
#include "backends/mthreads/mupti_dialect.h"
#include "backends/mthreads/musa_driver.h"
#include "bindings/bindings.h"

namespace ftp {
namespace {

void defineMusa(nb::module_& m) {
  m.def("musa_load_driver", []() {
    std::string error;
    if (!MusaDriver::instance().load(MuptiTracer::instance().handle(), error)) throw std::runtime_error(error);
    return MusaDriver::instance().where();
  });
  m.def("musa_devices", []() {
    nb::list out;
    for (const MusaDeviceInfo& d : MusaDriver::instance().devices()) {
      nb::dict info = gpuFacts(d);
      info["warp_size"] = d.warpSize;
      info["max_threads_per_sm"] = d.maxThreadsPerSm;
      out.append(info);
    }
    return out;
  });
  m.def("mupti_metrics_session", [](int slot, uint32_t groups) {
    if (slot < 0 || slot >= kMaxSessions) throw std::invalid_argument("bad session slot");
    MusaLaunchMetrics::instance().setSession(slot, groups);
  });
  m.def("mupti_metric_names", [](uint32_t groups) {
    std::vector<std::string> names;
    for (const char* n : MusaLaunchMetrics::metricNames(groups)) names.emplace_back(n);
    return names;
  });
  m.def("mupti_metrics_measured", []() { return MusaLaunchMetrics::instance().launchesMeasured(); });
}

}  // namespace

void registerMthreadsBindings(nb::module_& m) {
  defineDialectTracer<MuptiDialect>(m, "mupti", DeviceType::MUSA);
  defineMusa(m);
}

}  // namespace ftp
