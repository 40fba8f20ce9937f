// Python bindings of the non-NVIDIA CUPTI-dialect tracers: MUPTI (backend "mthreads") and
// MSPTI (backend "cann"). Each vendor table is loaded once and kept for the process (the
// libraries are never dlclosed); a different path is only loaded while its tracer is idle.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "backends/mspti/acl_runtime.h"
#include "backends/mspti/mspti_dialect.h"
#include "backends/mspti/mstx_scopes.h"
#include "backends/mupti/launch_metrics.h"
#include "backends/mupti/mupti_dialect.h"
#include "backends/mupti/musa_driver.h"
#include "bindings/bindings.h"

namespace nb = nanobind;

namespace ftp {
namespace {

template <typename D>
const typename D::Api& loadTable(const std::string& path) {
  static typename D::Api api;
  if (api.handle && (api.path == path || DialectTracer<D>::instance().running())) return api;
  typename D::Api loaded;
  loaded.load(path);  // LibraryNotFound names the library and what it lacks
  api = loaded;
  return api;
}

// The tracer calls both backends share, under "<prefix>_...".
template <typename D>
void defineTracer(nb::module_& m, const std::string& prefix, DeviceType device) {
  using Tracer = DialectTracer<D>;
  m.def((prefix + "_acquire").c_str(), [device](const std::string& path, size_t bufferBytes) {
    Tracer::instance().acquire(loadTable<D>(path), bufferBytes, device);
  }, nb::call_guard<nb::gil_scoped_release>());
  m.def((prefix + "_release").c_str(), []() { Tracer::instance().release(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def((prefix + "_flush").c_str(), []() { Tracer::instance().flush(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def((prefix + "_running").c_str(), []() { return Tracer::instance().running(); });
  m.def((prefix + "_dropped").c_str(), []() { return Tracer::instance().droppedRecords(); });
  m.def((prefix + "_set_buffer_limit").c_str(), [](size_t bytes) { Tracer::instance().setBufferLimit(bytes); });
  m.def((prefix + "_library").c_str(), []() { return Tracer::instance().libraryPath(); });
  m.def((prefix + "_handle_loaded").c_str(), []() { return Tracer::instance().handle() != nullptr; });
  m.def((prefix + "_stats").c_str(), []() {
    Tracer& t = Tracer::instance();
    nb::dict d;
    for (size_t i = 0; i < D::kCounterNames.size(); ++i) d[D::kCounterNames[i]] = t.counter(i);
    d["declined_buffers"] = t.declinedBuffers();
    d["traced_callbacks"] = t.tracedCallbacks();
    d["buffers_after_teardown"] = t.buffersAfterTeardown();
    nb::list refused;
    for (auto kind : t.refusedKinds()) refused.append(int(kind));
    d["refused_kinds"] = refused;
    return d;
  });
}

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

void defineAscend(nb::module_& m) {
  m.def("mstx_acquire", []() { MstxScopes::instance().acquire(MsptiTracer::instance().handle()); });
  m.def("mstx_release", []() { MstxScopes::instance().release(); });
  m.def("mstx_stats", []() {
    nb::dict d;
    d["ranges_started"] = MstxScopes::instance().rangesStarted();
    d["ranges_ended"] = MstxScopes::instance().rangesEnded();
    return d;
  });
  m.def("npu_devices", []() {
    nb::list out;
    if (!AclRuntime::instance().find(MsptiTracer::instance().handle())) return out;
    for (const NpuDeviceInfo& d : AclRuntime::instance().devices()) {
      nb::dict info;
      info["index"] = d.index;
      info["arch"] = d.socName;
      out.append(info);
    }
    return out;
  });
}

}  // namespace

void registerCannLaunchBindings(nb::module_& m);  // backends/cann/cann_launch_bindings.cpp

void registerVendorTracerBindings(nb::module_& m) {
  registerCannLaunchBindings(m);
  defineTracer<MuptiDialect>(m, "mupti", DeviceType::MUSA);
  defineTracer<MsptiDialect>(m, "mspti", DeviceType::NPU);
  defineMusa(m);
  defineAscend(m);
}

}  // namespace ftp
