// Python bindings of the cann backend's launch path: Triton's launch hook enters and leaves each
// launch here (triton-ascend's launcher calls rtKernelLaunch, which MSPTI's callbacks never see),
// and what the join of launches to MSPTI's records counted.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "backends/cann/mspti_dialect.h"
#include "session/profiler.h"

namespace nb = nanobind;

namespace ftp {

void registerCannLaunchBindings(nb::module_& m) {
  m.def("mspti_launch_enter", []() {
    uint32_t id = 0;
    {
      // Another thread's launch may hold the serialisation (external_join.h): wait without the
      // GIL, which that thread needs to reach its exit hook.
      nb::gil_scoped_release release;
      id = MsptiDialect::external().enter(true);
    }
    if (id) Profiler::instance().onLaunch(id, false);
    return id;
  });
  m.def("mspti_launch_exit", []() { MsptiDialect::external().exit(true); });
  m.def("mspti_join_stats", []() {
    const ExternalJoin& join = MsptiDialect::external();
    nb::dict d;
    d["mapping_records"] = join.mappings();
    d["joined_by_external_id"] = join.joined();
    d["joined_by_launch_order"] = join.fallbackJoined();
    d["unmatched_records"] = join.unmatched();
    d["unserialized_launches"] = join.unserialized();
    d["resubscribe_failures"] = MsptiTracer::instance().resubscribeFailures();
    return d;
  });
  m.def("mspti_callback_refusal", []() {
    const msptiResult rc = MsptiTracer::instance().callbackRefusal();
    return rc == MSPTI_SUCCESS ? std::string() : MsptiTracer::instance().api().describe(rc);
  });
}

}  // namespace ftp
