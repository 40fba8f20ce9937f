// flagtree.profiler._native: the module, assembled from one register function per area
// (csrc/bindings/bindings.h). Functions only tests and bench call live in the submodule
// `_native.testing`, out of the public module.
#include "bindings/bindings.h"
#include "context/thread_state.h"

NB_MODULE(_native, m) {
  using namespace ftp;
  m.doc() = "FlagTree Profiler native core";
  m.attr("MAX_SESSIONS") = kMaxSessions;
  nb::module_ testing = m.def_submodule(
      "testing", "The launch and record paths driven by hand, for CPU tests of what a GPU backend does");
  registerErrorsAndEnums(m);
  registerContextBindings(m, testing);
  registerSessionBindings(m, testing);
  registerDumpBindings(m);
  registerNvidiaBindings(m, testing);
  registerRoctracerBindings(m);
  registerCountersBindings(m, testing);
  registerPcSamplingBindings(m, testing);
  registerInstrumentationBindings(m, testing);
  registerDeviceTimerBindings(m, testing);
  registerInheritanceBindings(m);
  registerLaunchLogBindings(m);
  registerVendorTracerBindings(m);
  registerViewerBindings(m);
  registerViewerWalkBindings(m);
}
