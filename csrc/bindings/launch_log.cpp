// Python bindings of the per-session launch log (session/launch_log.h):
// flagtree.profiler._native.launch_log_*.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <unordered_map>

#include "core/strings.h"
#include "bindings/bindings.h"
#include "session/launch_log.h"
#include "session/profiler.h"

namespace nb = nanobind;

namespace ftp {

namespace {

const char* kindName(RecordKind kind) {
  switch (kind) {
    case RecordKind::Memcpy: return "memcpy";
    case RecordKind::Memset: return "memset";
    default: return "kernel";
  }
}

// [(kind, name), ...] from below the root down to `node` (kinds as the tree output spells them).
nb::list pathTo(Tree& tree, uint32_t node) {
  std::vector<uint32_t> chain;
  for (uint32_t cur = node; cur != Tree::kRoot; cur = tree.node(cur).parent) chain.push_back(cur);
  nb::list out;
  for (size_t i = chain.size(); i-- > 0;) {
    const TreeNode& n = tree.node(chain[i]);
    out.append(nb::make_tuple(nodeKindName(n.kind), nameOf(n.name)));
  }
  return out;
}

// The log as columns (one list per field, entries in arrival order).
nb::dict entriesOf(int slot) {
  Session& s = sessionAt(slot);
  const std::vector<LaunchLogEntry> log = launch_log::entries(s);
  nb::list corr, names, kernels, nodes, paths, devices, streams, starts, ends, launches, kinds, tids;
  DataStore& store = s.store();
  std::lock_guard<std::mutex> lock(store.mutex());
  std::unordered_map<uint32_t, nb::list> pathOf;
  for (const LaunchLogEntry& e : log) {
    // The record's node exists already, so this only finds it.
    const uint32_t node = store.recordNode(e.context, e.state, e.kind, e.name);
    auto it = pathOf.find(node);
    if (it == pathOf.end()) it = pathOf.emplace(node, pathTo(store.contexts(), node)).first;
    corr.append(e.correlation);
    names.append(nameOf(e.name));
    kernels.append(nameOf(e.kernel));
    nodes.append(node);
    paths.append(it->second);
    devices.append(e.deviceId);
    streams.append(e.streamId);
    starts.append(e.startNs);
    ends.append(e.endNs);
    launches.append(e.launchNs);
    kinds.append(kindName(e.kind));
    tids.append(e.tid);
  }
  nb::dict out;
  out["correlation"] = corr;
  out["name"] = names;
  out["kernel"] = kernels;
  out["node"] = nodes;
  out["path"] = paths;
  out["device_id"] = devices;
  out["stream_id"] = streams;
  out["start_ns"] = starts;
  out["end_ns"] = ends;
  out["launch_ns"] = launches;
  out["kind"] = kinds;
  out["tid"] = tids;
  return out;
}

// Vendor rows no launch explains: kept in the tree under ROOT/<holder>/<names...> (scopes),
// counted and with their metrics, so they are visible rather than dropped.
void addHeldRow(int slot, const std::string& holder, const std::vector<std::string>& names,
                const std::vector<std::pair<std::string, double>>& metrics) {
  DataStore& store = sessionAt(slot).store();
  std::lock_guard<std::mutex> lock(store.mutex());
  Tree& tree = store.contexts();
  uint32_t node = tree.child(Tree::kRoot, NodeKind::Scope, intern(holder));
  for (const std::string& name : names) node = tree.child(node, NodeKind::Scope, intern(name));
  store.holdRow(node, metricIds(metrics));
}

}  // namespace

void registerLaunchLogBindings(nb::module_& m) {
  m.def("launch_log_enable", [](int slot, bool on) { launch_log::enable(sessionAt(slot), on); },
        nb::arg("slot"), nb::arg("on") = true);
  m.def("launch_log_entries", &entriesOf, nb::arg("slot"));
  m.def("session_add_held_row", &addHeldRow, nb::arg("slot"), nb::arg("holder"), nb::arg("names"),
        nb::arg("metrics"));
}

}  // namespace ftp
