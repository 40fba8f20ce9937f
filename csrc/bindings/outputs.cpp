// A session's data handed to the writers: the tree as flat columns (Python writes the Hatchet
// JSON) and the Chrome trace written natively.
#include <nanobind/stl/string.h>

#include "bindings/bindings.h"
#include "core/strings.h"
#include "dump/chrome_trace.h"
#include "session/profiler.h"

namespace ftp {

namespace {

nb::dict nodeMetrics(const Session& s, uint32_t id, const TreeNode& n) {
  nb::dict m;
  const NodeMetrics& x = n.metrics;
  if (x.count) m["count"] = x.count;
  if (x.timeNs || x.count) m["time (ns)"] = x.timeNs;
  if (x.cpuTimeNs) m["cpu_time (ns)"] = x.cpuTimeNs;
  if (x.deviceId >= 0) m["device_id"] = x.deviceId;
  if (x.deviceType >= 0) m["device_type"] = x.deviceType;
  for (const auto& u : x.user) m[nb::str(nameOf(u.first).c_str())] = s.metricValue(id, u.first, u.second);
  return m;
}

// The tree as flat columns (parent before child); Python writes the Hatchet JSON. With
// `zero`, the metrics are zeroed under the same lock (a periodic part was taken).
nb::dict exportTree(int slot, bool zero) {
  Session& s = sessionAt(slot);
  std::lock_guard<std::mutex> lock(s.tree.mutex());
  const auto& nodes = s.tree.nodes();
  nb::list parents, kinds, names, metrics, details;
  for (uint32_t id = 0; id < nodes.size(); ++id) {
    const TreeNode& n = nodes[id];
    parents.append(n.parent);
    kinds.append(int(n.kind));
    names.append(nameOf(n.name));
    metrics.append(nodeMetrics(s, id, n));
    if (n.kind == NodeKind::Kernel && n.config) {
      const LaunchConfig& c = s.tree.configs()[n.config];
      nb::dict d;
      d["grid"] = nb::make_tuple(c.grid[0], c.grid[1], c.grid[2]);
      d["block"] = nb::make_tuple(c.block[0], c.block[1], c.block[2]);
      d["registers"] = c.registers;
      d["static_shared_memory"] = c.staticSharedMemory;
      d["dynamic_shared_memory"] = c.dynamicSharedMemory;
      if (n.mangled) d["mangled_name"] = nameOf(n.mangled);
      details.append(d);
    } else {
      details.append(nb::none());
    }
  }
  nb::dict out;
  out["parent"] = parents;
  out["kind"] = kinds;
  out["name"] = names;
  out["metrics"] = metrics;
  out["details"] = details;
  if (zero) s.tree.zeroMetrics();
  return out;
}

}  // namespace

void registerOutputBindings(nb::module_& m) {
  m.def("session_export_tree", &exportTree, nb::arg("slot"), nb::arg("zero") = false);
  m.def("session_write_trace",
        [](int slot, const std::string& path, uint64_t originNs, int pid, const std::string& otherData,
           bool clear) {
          TraceWriteOptions opt{path, originNs, pid, otherData, clear};
          return writeChromeTrace(sessionAt(slot), opt);
        },
        nb::arg("slot"), nb::arg("path"), nb::arg("origin_ns"), nb::arg("pid"), nb::arg("other_data"),
        nb::arg("clear") = false, nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace ftp
