// Python entry points of the roctracer backend (AMD).
#include <nanobind/stl/string.h>

#include "backends/roctracer/roctracer_tracer.h"
#include "bindings/bindings.h"

namespace ftp {

namespace {

void roctracerAcquire(const std::string& path, size_t bufferBytes) {
  static RoctracerApi api;  // the library stays mapped for the process
  RoctracerTracer& tracer = RoctracerTracer::instance();
  if (!tracer.running() && api.path != path) {
    RoctracerApi loaded;
    loaded.load(path);  // LibraryNotFound: Python tries the next candidate
    api = loaded;
  }
  tracer.acquire(api, bufferBytes);
}

nb::dict roctracerStats() {
  RoctracerTracer::Stats s = RoctracerTracer::instance().stats();
  nb::dict d;
  d["kernels"] = s.kernels;
  d["copies"] = s.copies;
  d["sets"] = s.sets;
  d["skipped"] = s.skipped;
  d["traced_apis"] = s.tracedApis;
  d["domain_callback"] = s.domainCallback;
  return d;
}

}  // namespace

void registerRoctracerBindings(nb::module_& m) {
  m.def("roctracer_acquire", &roctracerAcquire, nb::call_guard<nb::gil_scoped_release>());
  m.def("roctracer_release", []() { RoctracerTracer::instance().release(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def("roctracer_flush", []() { RoctracerTracer::instance().flush(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def("roctracer_running", []() { return RoctracerTracer::instance().running(); });
  m.def("roctracer_version", []() { return RoctracerTracer::instance().libraryVersion(); });
  m.def("roctracer_library", []() { return RoctracerTracer::instance().libraryPath(); });
  m.def("roctracer_stats", &roctracerStats);
}

}  // namespace ftp
