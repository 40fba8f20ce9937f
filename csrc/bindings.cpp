// The nanobind layer: translates Python calls to the native core, nothing else.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <stdexcept>

#include "backends/activity/activity_tracer.h"
#include "backends/nvidia/cuda_driver.h"
#include "backends/roctracer/roctracer_tracer.h"  // roctracer backend
#include "core/clock.h"
#include "core/strings.h"
#include "dump/chrome_trace.h"
#include "session/profiler.h"

namespace nb = nanobind;
using namespace ftp;

namespace ftp {
void registerCountersBindings(nb::module_& m);  // backends/counters/counters_bindings.cpp
void registerInstrumentationBindings(nb::module_& m);  // backends/instrumentation/launch_correlation.cpp
void registerInheritanceBindings(nb::module_& m);  // context/inheritance_bindings.cpp
}

namespace {

Session& sessionAt(int slot) {
  Session* s = Profiler::instance().session(slot);
  if (!s) throw nb::value_error("no profiling session in this slot");
  return *s;
}

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

std::vector<std::pair<uint32_t, double>> metricIds(const std::vector<std::pair<std::string, double>>& in) {
  std::vector<std::pair<uint32_t, double>> out;
  out.reserve(in.size());
  for (const auto& m : in) out.emplace_back(intern(m.first), m.second);
  return out;
}

using MetricsIn = std::vector<std::pair<std::string, double>>;
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

const ActivityApi& loadCupti(const std::string& path) {
  static ActivityApi api;  // the library stays mapped for the process
  std::string error;
  if (api.handle && (api.path == path || ActivityTracer::instance().running())) return api;
  ActivityApi loaded;
  if (!loaded.load(path, "cupti", error)) throw std::runtime_error(error);
  api = loaded;
  std::string driverError;
  CudaDriver::instance().load(driverError);  // optional: only used for syncing at flush
  return api;
}

void cuptiAcquire(const std::string& path, size_t bufferBytes) {
  ActivityTracer::instance().acquire(loadCupti(path), bufferBytes, DeviceType::CUDA);
}

nb::list cudaDevices() {
  std::string error;
  if (!CudaDriver::instance().load(error)) throw std::runtime_error(error);
  nb::list out;
  for (const CudaDeviceInfo& d : CudaDriver::instance().devices()) {
    nb::dict info;
    info["index"] = d.index;
    info["name"] = d.name;
    info["arch"] = std::to_string(d.major * 10 + d.minor);
    info["num_sms"] = d.numSms;
    info["clock_rate"] = d.clockRateKhz;
    info["memory_clock_rate"] = d.memoryClockRateKhz;
    info["bus_width"] = d.busWidthBits;
    out.append(info);
  }
  return out;
}

}  // namespace

void registerPcSamplingBindings(nb::module_& m);  // backends/pcsampling

NB_MODULE(_native, m) {
  registerPcSamplingBindings(m);
  m.doc() = "FlagTree Profiler native core";
  m.attr("MAX_SESSIONS") = kMaxSessions;
  registerCountersBindings(m);
  registerInstrumentationBindings(m);
  registerInheritanceBindings(m);

  m.def("intern", [](const std::string& s) { return intern(s); });
  m.def("monotonic_ns", &monotonicNs);
  m.def("realtime_ns", &realtimeNs);

  // Shadow context and states.
  m.def("scope_enter", [](uint32_t name) { Profiler::instance().enterScope(name, {}); });
  m.def("scope_enter_metrics", [](uint32_t name, const std::vector<std::pair<std::string, double>>& metrics) {
    Profiler::instance().enterScope(name, metricIds(metrics));
  });
  m.def("scope_exit", [](bool cpuTimed) { Profiler::instance().exitScope(cpuTimed); }, nb::arg("cpu_timed") = false);
  m.def("scope_depth", []() { return threadState().scopes.size(); });
  m.def("state_push", [](uint32_t name) { Profiler::instance().pushState(name); });
  m.def("state_pop", []() { Profiler::instance().popState(); });
  m.def("set_launch_metadata",
        [](std::optional<std::string> name, const std::vector<std::pair<std::string, double>>& metrics) {
          auto* meta = new LaunchMetadata();
          if (name) meta->name = intern(*name);
          meta->metrics = metricIds(metrics);
          Profiler::instance().setLaunchMetadata(meta);
        });
  m.def("clear_launch_metadata", []() { Profiler::instance().setLaunchMetadata(nullptr); });

  // Sessions.
  m.def("session_create", [](int context, int data) {
    return Profiler::instance().createSession(static_cast<ContextKind>(context), static_cast<DataKind>(data));
  });
  m.def("session_set_active", [](int slot, bool active) { Profiler::instance().setActive(slot, active); });
  m.def("session_begin_close", [](int slot) { Profiler::instance().beginClose(slot); });
  m.def("session_is_active", [](int slot) { return Profiler::instance().isActive(slot); });
  m.def("session_remove", [](int slot) {
    Session* s = Profiler::instance().removeSession(slot);
    if (!s) return;
    std::lock_guard<std::mutex> lock(s->tree.mutex());
    s->tree.reset();
    std::lock_guard<std::mutex> tlock(s->trace.mutex());
    s->trace.clear();
  });
  m.def("session_export_tree", &exportTree, nb::arg("slot"), nb::arg("zero") = false);
  m.def("session_write_trace",
        [](int slot, const std::string& path, uint64_t originNs, int pid, const std::string& otherData,
           bool clear) {
          TraceWriteOptions opt{path, originNs, pid, otherData, clear};
          return writeChromeTrace(sessionAt(slot), opt);
        },
        nb::arg("slot"), nb::arg("path"), nb::arg("origin_ns"), nb::arg("pid"), nb::arg("other_data"),
        nb::arg("clear") = false, nb::call_guard<nb::gil_scoped_release>());
  m.def("session_stats", [](int slot) {
    Session& s = sessionAt(slot);
    nb::dict d;
    d["records"] = s.records.load();
    d["unattributed"] = s.unattributed.load();
    return d;
  });
  // Extras: results joined to a launch after the fact (counters, PC samples, kernel scopes).
  m.def("session_attach", &attachExtra, nb::arg("slot"), nb::arg("correlation"), nb::arg("metrics"),
        nb::arg("children") = std::vector<ExtraChildIn>{});
  m.def("session_enable_extras", [](int slot) { Profiler::instance().enableExtras(slot); });
  m.def("session_set_mean_metrics", [](int slot, const std::vector<std::string>& names) {
    std::vector<uint32_t> ids;
    for (const auto& n : names) ids.push_back(intern(n));
    Profiler::instance().setMeanMetrics(slot, ids);
  });
  m.def("session_settle_extras", [](int slot) { return sessionAt(slot).settleExtras(); });
  m.def("pending_launches", [](int slot) { return Profiler::instance().pendingLaunches(1u << slot); });
  m.def("prune_graph_launches", [](uint64_t beforeNs) { return Profiler::instance().pruneMultiLaunches(beforeNs); });
  m.def("captured_graph_nodes", []() { return Profiler::instance().capturedGraphNodes(); });

  // The launch and record paths driven by hand, for CPU tests of what a GPU backend does
  // (graph capture and replay): correlation ids below 0x80000000 are the caller's.
  m.def("_debug_launch", [](uint32_t corr, bool multi) { Profiler::instance().onLaunch(corr, multi); });
  m.def("_debug_graph_node_created", [](uint32_t corr, uint64_t node) {
    Profiler::instance().onGraphNodeCreated(corr, node);
  });
  m.def("_debug_graph_node_cloned", [](uint64_t node, uint64_t original) {
    Profiler::instance().onGraphNodeCloned(node, original);
  });
  m.def("_debug_record", [](uint32_t corr, const std::string& name, uint64_t startNs, uint64_t endNs,
                            uint64_t graphNode) {
    DeviceRecord r;
    r.kind = RecordKind::Kernel;
    r.deviceType = DeviceType::CPU;
    r.correlation = corr;
    r.startNs = startNs;
    r.endNs = endNs;
    r.name = intern(name);
    r.graphNodeId = graphNode;
    Profiler::instance().onRecord(r);
  });

  // Host-side backends (interpreter): one call per finished launch, context taken now.
  m.def("record_host_kernel", &recordHostKernel, nb::arg("name"), nb::arg("start_ns"), nb::arg("end_ns"),
        nb::arg("grid"), nb::arg("block"), nb::arg("device_type") = int(DeviceType::CPU),
        nb::arg("device_id") = 0, nb::arg("stream_id") = 0);

  // NVIDIA: CUPTI activity tracing and the driver.
  m.def("cupti_acquire", &cuptiAcquire, nb::call_guard<nb::gil_scoped_release>());
  m.def("cupti_floor_start", [](const std::string& path, size_t bufferBytes, bool emptyCallbacks) {
    ActivityTracer::instance().startFloor(loadCupti(path), bufferBytes, emptyCallbacks);
  }, nb::call_guard<nb::gil_scoped_release>());
  m.def("cupti_release", []() { ActivityTracer::instance().release(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def("cupti_flush", []() { ActivityTracer::instance().flush(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def("cupti_dropped", []() { return ActivityTracer::instance().droppedRecords(); });
  m.def("cupti_set_buffer_limit", [](size_t bytes) { ActivityTracer::instance().setBufferLimit(bytes); });
  m.def("cupti_declined_buffers", []() { return ActivityTracer::instance().declinedBuffers(); });
  m.def("cupti_version", []() { return ActivityTracer::instance().libraryVersion(); });
  m.def("cupti_library", []() { return ActivityTracer::instance().libraryPath(); });
  m.def("cuda_devices", &cudaDevices);
  m.def("cuda_driver_version", []() {
    std::string error;
    return CudaDriver::instance().load(error) ? CudaDriver::instance().driverVersion() : 0;
  });

  // ---- roctracer backend (AMD): begin ----
  m.def("roctracer_acquire", [](const std::string& path, size_t bufferBytes) {
    static RoctracerApi api;  // the library stays mapped for the process
    RoctracerTracer& tracer = RoctracerTracer::instance();
    if (!tracer.running() && api.path != path) {
      RoctracerApi loaded;
      std::string error;
      if (!loaded.load(path, error)) throw std::runtime_error(error);
      api = loaded;
    }
    tracer.acquire(api, bufferBytes);
  }, nb::call_guard<nb::gil_scoped_release>());
  m.def("roctracer_release", []() { RoctracerTracer::instance().release(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def("roctracer_flush", []() { RoctracerTracer::instance().flush(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def("roctracer_running", []() { return RoctracerTracer::instance().running(); });
  m.def("roctracer_version", []() { return RoctracerTracer::instance().libraryVersion(); });
  m.def("roctracer_library", []() { return RoctracerTracer::instance().libraryPath(); });
  m.def("roctracer_stats", []() {
    RoctracerTracer::Stats s = RoctracerTracer::instance().stats();
    nb::dict d;
    d["kernels"] = s.kernels;
    d["copies"] = s.copies;
    d["sets"] = s.sets;
    d["skipped"] = s.skipped;
    d["traced_apis"] = s.tracedApis;
    d["domain_callback"] = s.domainCallback;
    return d;
  });
  // ---- roctracer backend (AMD): end ----
}
