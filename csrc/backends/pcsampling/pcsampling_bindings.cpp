// Python entry points of PC sampling (backend "cupti", mode "pcsampling").
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "backends/nvidia/cupti_tracer.h"
#include "backends/pcsampling/pc_sampler.h"
#include "bindings/bindings.h"
#include "core/library.h"

namespace ftp {
namespace {

// `library`: "" uses the libcupti the tracer loaded; a path is for stand-in libraries (tests).
void startSampling(int slot, const std::string& library, uint32_t period, bool serialized, size_t scratchBytes,
                   size_t hardwareBytes, size_t bufferPcs, bool sessionRange) {
  void* handle = nullptr;
  std::string name = library;
  if (library.empty()) {
    CuptiTracer& tracer = CuptiTracer::instance();
    if (!tracer.running() || !tracer.handle())
      throw std::runtime_error("PC sampling needs the CUPTI tracer running (start a cupti session first)");
    handle = tracer.handle();
    name = tracer.libraryPath();
  } else {
    handle = openLibrary(library);
  }
  PcSamplingOptions options;
  options.period = period;
  options.serialized = serialized;
  options.sessionRange = sessionRange;
  options.scratchBytes = scratchBytes;
  options.hardwareBytes = hardwareBytes;
  options.bufferPcs = bufferPcs;
  PcSampler::instance().start(slot, handle, name, options);
  if (library.empty()) CuptiTracer::instance().addObserver(&PcSampler::instance());
}

nb::dict finishSampling() {
  CuptiTracer::instance().removeObserver(&PcSampler::instance());
  const PcSamplingStats s = PcSampler::instance().finish();
  nb::dict d;
  d["pcsampling_total_samples"] = s.totalSamples;
  d["pcsampling_dropped_samples"] = s.droppedSamples;
  d["pcsampling_non_user_samples"] = s.nonUserSamples;
  d["pcsampling_unattributed_samples"] = s.unattributedSamples;
  d["pcsampling_unknown_reason_samples"] = s.unknownReasonSamples;
  d["pcsampling_lines_without_source"] = s.linesWithoutSource;
  d["pcsampling_unknown_cubins"] = s.unknownCubins;
  d["pcsampling_hardware_buffer_full"] = s.hardwareBufferFull;
  d["pcsampling_get_data_calls"] = s.getDataCalls;
  d["pcsampling_contexts"] = s.contexts;
  d["pcsampling_failed_contexts"] = s.failedContexts;
  d["pcsampling_stall_reasons"] = s.stallReasons;
  d["pcsampling_sampled_launches"] = s.sampledLaunches;
  d["pcsampling_unsampled_launches"] = s.unsampledLaunches;
  d["pcsampling_range"] = s.range;
  d["pcsampling_attribution"] = s.attribution;
  d["pcsampling_enable_s"] = s.enableNs * 1e-9;
  d["pcsampling_start_s"] = s.startNs * 1e-9;
  d["pcsampling_stop_s"] = s.stopNs * 1e-9;
  d["pcsampling_lines_s"] = s.linesNs * 1e-9;
  d["pcsampling_errors"] = s.errors;
  if (s.errors) d["pcsampling_first_error"] = s.firstError;
  return d;
}

}  // namespace

void registerPcSamplingBindings(nb::module_& m) {
  m.def("pcsampling_start", &startSampling, nb::arg("slot"), nb::arg("library"), nb::arg("period"),
        nb::arg("serialized"), nb::arg("scratch_bytes"), nb::arg("hardware_bytes"), nb::arg("buffer_pcs"),
        nb::arg("session_range") = false,
        nb::call_guard<nb::gil_scoped_release>());
  m.def("pcsampling_finish", &finishSampling);
  // Stop before finish: Python looks up the cubins of the missing CRCs (modules loaded before the
  // session) only when some are missing, instead of scanning its objects at every finalize.
  m.def("pcsampling_stop", []() { return PcSampler::instance().stop(); });
  m.def("pcsampling_add_cubin", [](nb::bytes cubin) { PcSampler::instance().addCubin(cubin.c_str(), cubin.size()); });
}

#ifdef FLAGTREE_PROFILER_TESTING
void registerPcSamplingTesting(nb::module_& testing) {
  testing.def("pcsampling_running", []() { return PcSampler::instance().running(); });
  // The launch path without CUPTI callbacks (stand-in tests): what the tracer passes on at the
  // ENTER (context) and EXIT (kernel name) of a launch.
  testing.def("pcsampling_launch_enter", [](uint32_t correlation, uintptr_t context) {
    PcSampler::instance().launchEnter(correlation, reinterpret_cast<void*>(context));
  });
  testing.def("pcsampling_launch_exit", [](uint32_t correlation, const std::string& function) {
    PcSampler::instance().launchExit(correlation, function.c_str());
  });
  // The tracer's context-created event (a launch call that creates its context).
  testing.def("pcsampling_context_created",
              [](uintptr_t context) { PcSampler::instance().onContextCreated(reinterpret_cast<void*>(context)); });
}
#endif

}  // namespace ftp
