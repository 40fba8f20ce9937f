// Session lifecycle, statistics and extras, and the launches of host-side backends (the
// interpreter); and, in `testing` (FLAGTREE_PROFILER_TESTING builds), the launch and record
// paths driven by hand.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <stdexcept>
#include <tuple>

#include "bindings/bindings.h"
#include "core/strings.h"
#include "session/profiler.h"

namespace ftp {

Session& sessionAt(int slot) {
  Session* s = Profiler::instance().session(slot);
  if (!s) throw nb::value_error("no profiling session in this slot");
  return *s;
}

namespace {

using ExtraChildIn = std::pair<std::vector<std::pair<std::string, std::string>>, MetricsIn>;

NodeKind extraNodeKind(const std::string& kind) {
  if (kind == "line") return NodeKind::Line;
  if (kind == "device_scope") return NodeKind::DeviceScope;
  if (kind == "kernel") return NodeKind::Kernel;
  if (kind == "scope") return NodeKind::Scope;
  throw std::invalid_argument("unknown node kind '" + kind + "' (line, device_scope, kernel, scope)");
}

void attachExtra(int slot, uint32_t correlation, const MetricsIn& metrics,
                 const std::vector<ExtraChildIn>& children) {
  LaunchExtra extra;
  extra.metrics = metricIds(metrics);
  for (const auto& c : children) {
    LaunchExtra::Child child;
    for (const auto& step : c.first) child.path.emplace_back(extraNodeKind(step.first), intern(step.second));
    child.metrics = metricIds(c.second);
    extra.children.push_back(std::move(child));
  }
  Profiler::instance().attachExtra(slot, correlation, std::move(extra));
}

// Host-side launches (the interpreter backend) get correlation ids from their own range.
std::atomic<uint32_t> hostCorrelation{0x80000000u};

void recordHostKernel(const std::string& name, uint64_t startNs, uint64_t endNs,
                      std::tuple<int, int, int> grid, std::tuple<int, int, int> block, int deviceType,
                      int deviceId, int streamId) {
  uint32_t corr = hostCorrelation.fetch_add(1);
  Profiler& p = Profiler::instance();
  p.onLaunch(corr, false, startNs);
  DeviceRecord r;
  r.kind = RecordKind::Kernel;
  r.deviceType = static_cast<DeviceType>(deviceType);
  r.correlation = corr;
  r.deviceId = deviceId;
  r.streamId = streamId;
  r.startNs = startNs;
  r.endNs = endNs;
  r.name = intern(name);
  r.grid[0] = std::get<0>(grid), r.grid[1] = std::get<1>(grid), r.grid[2] = std::get<2>(grid);
  r.block[0] = std::get<0>(block), r.block[1] = std::get<1>(block), r.block[2] = std::get<2>(block);
  p.onRecord(r);
}

void removeSession(int slot) {
  Session* s = Profiler::instance().removeSession(slot);
  if (s) s->store().release();
}

nb::dict sessionStats(int slot) {
  Session& s = sessionAt(slot);
  nb::dict d;
  d["records"] = s.records.load();
  d["unattributed"] = s.unattributed.load();
  d["placed_at_launch"] = s.placedAtLaunch.load();
  d["extras_enabled"] = s.extrasEnabled();
  d["nodes_kept_for_extras"] = s.nodesKeptForExtras();
  d["extras_after_part"] = s.extrasAfterPart();
  const DataStore::Conflicts conflicts = s.metricConflicts();
  d["metric_conflicts"] = conflicts.count;
  d["first_metric_conflict"] = conflicts.count ? nameOf(conflicts.firstName) : std::string();
  const int64_t lead = s.maxLaunchLeadNs.load();
  if (lead == Session::kNoLead) d["max_launch_lead_ns"] = nb::none();
  else d["max_launch_lead_ns"] = lead;
  return d;
}

}  // namespace

void registerSessionBindings(nb::module_& m) {
  m.def("session_create", [](int context, int data, int source, bool active) {
    return Profiler::instance().createSession(static_cast<ContextKind>(context), static_cast<DataKind>(data),
                                              static_cast<TimeSource>(source), active);
  }, nb::arg("context"), nb::arg("data"), nb::arg("source") = 0, nb::arg("active") = true);
  // Without the GIL: switching a vendor tracer quiet or back (DialectTracer::settle) waits for the
  // device, or for a flush another thread makes.
  m.def("session_set_active", [](int slot, bool active) { Profiler::instance().setActive(slot, active); },
        nb::call_guard<nb::gil_scoped_release>());
  m.def("session_set_time_source", [](int slot, int source) {
    Profiler::instance().setTimeSource(slot, static_cast<TimeSource>(source));
  });
  m.def("session_begin_close", [](int slot) { Profiler::instance().beginClose(slot); });
  m.def("session_is_active", [](int slot) { return Profiler::instance().isActive(slot); });
  m.def("session_remove", &removeSession);
  m.def("session_stats", &sessionStats);
  // Extras: results joined to a launch after the fact (counters, PC samples, kernel scopes).
  m.def("session_attach", &attachExtra, nb::arg("slot"), nb::arg("correlation"), nb::arg("metrics"),
        nb::arg("children") = std::vector<ExtraChildIn>{});
  // after_records: the extras may come after their record (the session then keeps every kernel's
  // node by correlation); False: they always come first, and their record finds them.
  m.def("session_enable_extras", [](int slot, bool afterRecords) { Profiler::instance().enableExtras(slot, afterRecords); },
        nb::arg("slot"), nb::arg("after_records") = true);
  m.def("session_set_mean_metrics", [](int slot, const std::vector<std::string>& names) {
    std::vector<uint32_t> ids;
    for (const auto& n : names) ids.push_back(intern(n));
    Profiler::instance().setMeanMetrics(slot, ids);
  });
  m.def("session_settle_extras", [](int slot) { return sessionAt(slot).settleExtras(); });
  m.def("pending_launches", [](int slot) { return Profiler::instance().pendingLaunches(1u << slot); });
  m.def("prune_graph_launches", [](uint64_t beforeNs) { return Profiler::instance().pruneMultiLaunches(beforeNs); });
  // Host-side backends (interpreter): one call per finished launch, context taken now.
  m.def("record_host_kernel", &recordHostKernel, nb::arg("name"), nb::arg("start_ns"), nb::arg("end_ns"),
        nb::arg("grid"), nb::arg("block"), nb::arg("device_type") = int(DeviceType::CPU),
        nb::arg("device_id") = 0, nb::arg("stream_id") = 0);
}

#ifdef FLAGTREE_PROFILER_TESTING
namespace {

// A kernel record as a backend would report it, for testing.record.
void recordByHand(uint32_t corr, const std::string& name, uint64_t startNs, uint64_t endNs, uint64_t graphNode) {
  DeviceRecord r;
  r.kind = RecordKind::Kernel;
  r.deviceType = DeviceType::CPU;
  r.correlation = corr;
  r.startNs = startNs;
  r.endNs = endNs;
  r.name = intern(name);
  r.graphNodeId = graphNode;
  Profiler::instance().onRecord(r);
}

}  // namespace

void registerSessionTesting(nb::module_& testing) {
  // The launch and record paths driven by hand, for CPU tests of what a GPU backend does
  // (graph capture and replay): correlation ids below 0x80000000 are the caller's.
  testing.def("launch", [](uint32_t corr, bool multi) { Profiler::instance().onLaunch(corr, multi); });
  testing.def("graph_node_created", [](uint32_t corr, uint64_t node) {
    Profiler::instance().onGraphNodeCreated(corr, node);
  });
  testing.def("graph_node_cloned", [](uint64_t node, uint64_t original) {
    Profiler::instance().onGraphNodeCloned(node, original);
  });
  testing.def("record", &recordByHand);
  testing.def("captured_graph_nodes", []() { return Profiler::instance().capturedGraphNodes(); });
}
#endif

}  // namespace ftp
