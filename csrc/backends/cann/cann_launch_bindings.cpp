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
  // A launch triton-ascend puts on its task queue: no window (external_join.h), joined by name.
  m.def("mspti_launch_queued", [](const std::string& kernelName, uint64_t stream) {
    const uint32_t id = MsptiDialect::external().enterQueued(kernelName, stream);
    if (id) Profiler::instance().onLaunch(id, false);
    return id;
  });
  m.def("mspti_join_stats", []() {
    const ExternalJoin& join = MsptiDialect::external();
    nb::dict d;
    d["mapping_records"] = join.mappings();
    d["joined_by_external_id"] = join.joined();
    d["joined_by_launch_order"] = join.fallbackJoined();
    d["unmatched_records"] = join.unmatched();
    d["unserialized_launches"] = join.unserialized();
    d["queued_launches"] = join.queuedLaunches();
    nb::dict byKind;  // every record each rule joined, and every one left unjoined, per kind
    for (size_t kind = 0; kind < ExternalJoin::kKindNames.size(); ++kind) {
      nb::dict rules;
      for (size_t rule = 0; rule < ExternalJoin::kRules; ++rule)
        rules[ExternalJoin::kRuleNames[rule]] = join.count(kind, ExternalJoin::Rule(rule));
      byKind[ExternalJoin::kKindNames[kind]] = rules;
    }
    d["records_by_kind"] = byKind;
    return d;
  });
  m.def("mspti_callback_refusal", []() {
    const msptiResult rc = MsptiTracer::instance().callbackRefusal();
    return rc == MSPTI_SUCCESS ? std::string() : MsptiTracer::instance().api().describe(rc);
  });
}

}  // namespace ftp
