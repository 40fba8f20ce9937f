// flagtree.profiler._native: the module, one submodule by concern, each assembled from the
// register functions of its area (csrc/bindings/bindings.h). The errors, the enums and
// MAX_SESSIONS, which every area shares, stay at the top. Functions only tests and bench call live
// in the submodule `_native.testing`, built only with the CMake option FLAGTREE_PROFILER_TESTING.
#include "bindings/bindings.h"
#include "context/thread_state.h"

NB_MODULE(_native, m) {
  using namespace ftp;
  m.doc() = "FlagTree Profiler native core";
  // What the profiler hands to Triton (its profile allocator, the slot launchers a stamped
  // kernel keeps) lives as long as Triton's caches, to the process's exit, where nanobind would
  // report each of them as a leak.
  nb::set_leak_warnings(false);
  m.attr("MAX_SESSIONS") = kMaxSessions;
  registerErrorsAndEnums(m);
  // The generic areas every backend may call.
  nb::module_ core = m.def_submodule("core", "Interned names, clocks, libraries already loaded, the kernel launch door");
  registerCoreBindings(core);
  registerLaunchDoor(core);
  nb::module_ context = m.def_submodule("context", "Scopes, states, launch metadata, inherited context");
  registerContextBindings(context);
  registerInheritanceBindings(context);
  nb::module_ session = m.def_submodule("session", "Sessions, extras, the launch log, host-side launches");
  registerSessionBindings(session);
  registerLaunchLogBindings(session);
  nb::module_ dump = m.def_submodule("dump", "A session's store written to its output file");
  registerDumpBindings(dump);
  nb::module_ viewer = m.def_submodule("viewer", "The viewer's fast reader and tree walks");
  registerViewerBindings(viewer);
  registerViewerWalkBindings(viewer);
  // One submodule a backend: a backend's Python side calls its own and the generic ones only.
  nb::module_ nvidia = m.def_submodule("nvidia", "CUPTI's tracer, the CUDA driver, the idle release");
  registerNvidiaBindings(nvidia);
  nb::module_ roctracer = m.def_submodule("roctracer", "roctracer's tracer");
  registerRoctracerBindings(roctracer);
  nb::module_ counters = m.def_submodule("counters", "CUPTI's hardware counters");
  registerCountersBindings(counters);
  nb::module_ pcsampling = m.def_submodule("pcsampling", "CUPTI's PC sampling");
  registerPcSamplingBindings(pcsampling);
  nb::module_ instrumentation = m.def_submodule("instrumentation", "The launch/correlation link");
  registerInstrumentationBindings(instrumentation);
  nb::module_ deviceTimer = m.def_submodule("device_timer", "The device ring of per-launch stamps");
  registerDeviceTimerBindings(deviceTimer);
  nb::module_ mthreads = m.def_submodule("mthreads", "MUPTI's tracer, the MUSA driver, launch metrics");
  registerMthreadsBindings(mthreads);
  nb::module_ cann = m.def_submodule("cann", "MSPTI's tracer, mstx scopes, the launch join");
  registerCannBindings(cann);
#ifdef FLAGTREE_PROFILER_TESTING
  nb::module_ testing = m.def_submodule(
      "testing", "The launch and record paths driven by hand, for CPU tests of what a GPU backend does");
  registerContextTesting(testing);
  registerSessionTesting(testing);
  registerNvidiaTesting(testing);
  registerCountersTesting(testing);
  registerPcSamplingTesting(testing);
  registerInstrumentationTesting(testing);
  registerDeviceTimerTesting(testing);
#endif
}
