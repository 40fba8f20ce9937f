// flagtree.profiler._native: the module, assembled from one register function per area
// (csrc/bindings/bindings.h). Functions only tests and bench call live in the submodule
// `_native.testing`, built only with the CMake option FLAGTREE_PROFILER_TESTING.
#include "bindings/bindings.h"
#include "context/thread_state.h"

NB_MODULE(_native, m) {
  using namespace ftp;
  m.doc() = "FlagTree Profiler native core";
  m.attr("MAX_SESSIONS") = kMaxSessions;
  registerErrorsAndEnums(m);
  registerContextBindings(m);
  registerSessionBindings(m);
  registerDumpBindings(m);
  registerNvidiaBindings(m);
  registerRoctracerBindings(m);
  registerCountersBindings(m);
  registerPcSamplingBindings(m);
  registerInstrumentationBindings(m);
  registerInheritanceBindings(m);
  registerLaunchLogBindings(m);
  registerMthreadsBindings(m);
  registerCannBindings(m);
  registerViewerBindings(m);
  registerViewerWalkBindings(m);
#ifdef FLAGTREE_PROFILER_TESTING
  nb::module_ testing = m.def_submodule(
      "testing", "The launch and record paths driven by hand, for CPU tests of what a GPU backend does");
  registerContextTesting(testing);
  registerSessionTesting(testing);
  registerNvidiaTesting(testing);
  registerCountersTesting(testing);
  registerPcSamplingTesting(testing);
  registerInstrumentationTesting(testing);
#endif
}
