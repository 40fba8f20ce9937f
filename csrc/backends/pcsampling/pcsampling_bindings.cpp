// Python entry points of PC sampling (backend "cupti", mode "pcsampling").
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <dlfcn.h>

#include <stdexcept>

#include "backends/activity/activity_tracer.h"
#include "backends/pcsampling/pc_sampler.h"
#include "bindings/bindings.h"
#include "core/library.h"

namespace ftp {
namespace {

// `library`: "" uses the libcupti the tracer loaded; a path is for stand-in libraries (tests).
// `serialKernelRecords`: debugging knob (FLAGTREE_PROFILER_PCSAMPLING_KERNEL_ACTIVITY=kernel).
void startSampling(int slot, const std::string& library, uint32_t period, bool serialized, size_t scratchBytes,
                   size_t hardwareBytes, size_t bufferPcs, bool serialKernelRecords, bool sessionRange,
                   bool keepEnabled, uint32_t workerSleepMs, uint32_t settleMaxMs) {
  void* handle = nullptr;
  std::string name = library;
  if (library.empty()) {
    ActivityTracer& tracer = ActivityTracer::instance();
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
  options.keepEnabled = keepEnabled;
  options.workerSleepMs = workerSleepMs;
  options.settleMaxMs = settleMaxMs;
  if (library.empty() && serialKernelRecords)
    ActivityTracer::instance().setKernelActivityKind(CUPTI_ACTIVITY_KIND_KERNEL);
  PcSampler::instance().start(slot, handle, name, options);
  if (library.empty()) ActivityTracer::instance().addObserver(&PcSampler::instance());
}

// The sampler stays an observer while it keeps contexts enabled: their module unloads and
// context ends must still be seen, and the tracer's stop releases them (onTracerStopping).
void unobserveUnlessKept() {
  if (!PcSampler::instance().keepsContexts()) ActivityTracer::instance().removeObserver(&PcSampler::instance());
}

nb::dict finishSampling() {
  PcSamplingStats s;
  try {
    s = PcSampler::instance().finish();
  } catch (...) {
    unobserveUnlessKept();
    throw;
  }
  unobserveUnlessKept();
  try {  // undo the debugging knob for sessions still tracing (no-op when unset)
    ActivityTracer::instance().setKernelActivityKind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  } catch (const std::exception&) {
    s.errors++;
  }
  nb::dict d;
  d["pcsampling_total_samples"] = s.totalSamples;
  d["pcsampling_taken_samples"] = s.takenSamples;
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
  if (s.range == "session" && s.attribution.rfind("per function", 0) == 0) {
    d["pcsampling_settle_s"] = s.settleNs * 1e-9;
    d["pcsampling_last_arrival_s"] = s.lastArrivalNs * 1e-9;
    d["pcsampling_first_arrival_s"] = s.firstArrivalNs * 1e-9;
    d["pcsampling_longest_gap_s"] = s.longestGapNs * 1e-9;
    d["pcsampling_first_read_samples"] = s.firstReadSamples;
    d["pcsampling_discarded_samples"] = s.discardedSamples;
    d["pcsampling_reused_contexts"] = s.reusedContexts;
    d["pcsampling_marker_samples"] = s.markerSamples;
    d["pcsampling_settle_fallbacks"] = s.settleFallbacks;
    d["pcsampling_late_samples"] = s.lateSamples;
  }
  d["pcsampling_errors"] = s.errors;
  if (s.errors) d["pcsampling_first_error"] = s.firstError;
  return d;
}

}  // namespace

void registerPcSamplingBindings(nb::module_& m, nb::module_& testing) {
  m.def("pcsampling_start", &startSampling, nb::arg("slot"), nb::arg("library"), nb::arg("period"),
        nb::arg("serialized"), nb::arg("scratch_bytes"), nb::arg("hardware_bytes"), nb::arg("buffer_pcs"),
        nb::arg("serial_kernel_records") = false, nb::arg("session_range") = false,
        nb::arg("keep_enabled") = false, nb::arg("worker_sleep_ms") = 0, nb::arg("settle_max_ms") = 1000,
        nb::call_guard<nb::gil_scoped_release>());
  m.def("pcsampling_finish", &finishSampling);
  // Stop before finish: Python looks up the cubins of the missing CRCs (modules loaded before the
  // session) only when some are missing, instead of scanning its objects at every finalize.
  m.def("pcsampling_stop", []() { return PcSampler::instance().stop(); });
  // Disables the contexts kept enabled between sessions (True if there were any).
  m.def("pcsampling_release_kept", []() {
    const bool released = PcSampler::instance().releaseKept();
    if (released) ActivityTracer::instance().removeObserver(&PcSampler::instance());
    return released;
  });

  // Stand-in tests: `symbol` of the library at `path` runs instead of the end marker kernel.
  testing.def("pcsampling_marker_standin", [](const std::string& path, const std::string& symbol) {
    if (path.empty()) return PcSampler::instance().setMarkerStandIn(nullptr);
    void* address = dlsym(openLibrary(path), symbol.c_str());
    if (!address) throw std::runtime_error(path + " lacks " + symbol);
    PcSampler::instance().setMarkerStandIn(reinterpret_cast<bool (*)()>(address));
  });
  testing.def("pcsampling_running", []() { return PcSampler::instance().running(); });
  m.def("pcsampling_add_cubin", [](nb::bytes cubin) { PcSampler::instance().addCubin(cubin.c_str(), cubin.size()); });
  // The launch path without CUPTI callbacks (stand-in tests): what the tracer passes on at the
  // ENTER (context) and EXIT (kernel name) of a launch.
  testing.def("pcsampling_launch_enter", [](uint32_t correlation, uintptr_t context) {
    PcSampler::instance().launchEnter(correlation, reinterpret_cast<void*>(context));
  });
  testing.def("pcsampling_launch_exit", [](uint32_t correlation, const std::string& function) {
    PcSampler::instance().launchExit(correlation, function.c_str());
  });
}

}  // namespace ftp
