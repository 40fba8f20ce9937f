// Python bindings every CUPTI-dialect backend shares, defined once over the tracer template: the
// tracer's calls under "<prefix>_..." (acquire, release, flush, stats, ...). Included by the one
// bindings file of each non-NVIDIA dialect (mthreads, cann); the nvidia backend binds CUPTI's
// tracer itself (nvidia_bindings.cpp), beside the CUDA driver and the idle release.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "backends/dialect/dialect_tracer.h"

namespace ftp {

namespace nb = nanobind;

// The dialect's table for `path`, loaded once and kept for the process (the libraries are never
// dlclosed); a different path is only loaded while the tracer is idle.
template <typename D>
const typename D::Api& loadDialectTable(const std::string& path) {
  static typename D::Api api;
  if (api.handle && (api.path == path || DialectTracer<D>::instance().running())) return api;
  typename D::Api loaded;
  loaded.load(path);  // LibraryNotFound names the library and what it lacks
  api = loaded;
  return api;
}

// The tracer calls of dialect D, under "<prefix>_...".
template <typename D>
void defineDialectTracer(nb::module_& m, const std::string& prefix, DeviceType device) {
  using Tracer = DialectTracer<D>;
  m.def((prefix + "_acquire").c_str(), [device](const std::string& path, size_t bufferBytes) {
    Tracer::instance().acquire(loadDialectTable<D>(path), bufferBytes, device);
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
    d["quiet"] = t.quiet();
    d["quiet_switches"] = t.quietSwitches();
    nb::list refused;
    for (auto kind : t.refusedKinds()) refused.append(int(kind));
    d["refused_kinds"] = refused;
    return d;
  });
}

}  // namespace ftp
