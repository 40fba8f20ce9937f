#include "dump/chrome_trace.h"

#include <set>
#include <string>

#include "dump/out_file.h"

namespace ftp {
namespace {

// Host tracks use the real pid; each device gets a pid of its own far above real pids.
constexpr int64_t kDevicePidBase = 1ll << 32;

const char* kindName(uint8_t kind) {
  switch (static_cast<RecordKind>(kind)) {
    case RecordKind::Memcpy: return "memcpy";
    case RecordKind::Memset: return "memset";
    default: return "kernel";
  }
}

class ChromeTraceWriter {
 public:
  ChromeTraceWriter(const ChromeTraceInput& input, const OutputRequest& request, JsonOut& out)
      : in_(input), req_(request), out_(out) {}

  void write() {
    out_.raw(R"({"displayTimeUnit":"ns","otherData":)");
    out_.raw(req_.otherDataJson);
    out_.raw(R"(,"traceEvents":[)");
    writeTrackNames();
    for (size_t i = 0; i < in_.scopes.size(); ++i) writeScope(in_.scopes[i]);
    for (size_t i = 0; i < in_.device.size(); ++i) writeDevice(in_.device[i], i + 1);
    out_.raw("\n]}\n");
  }

 private:
  void beginEvent() {
    if (first_) out_.raw('\n');
    else out_.raw(",\n");
    first_ = false;
  }
  void ts(uint64_t ns) { out_.micros(int64_t(ns) - int64_t(req_.originNs)); }
  void dur(uint64_t startNs, uint64_t endNs) { out_.micros(endNs > startNs ? int64_t(endNs - startNs) : 0); }

  void writeTrackNames() {
    std::set<uint32_t> hostThreads;
    std::set<std::pair<uint32_t, uint32_t>> streams;  // (device, stream)
    std::pair<uint32_t, uint32_t> lastStream{~0u, ~0u};
    uint32_t lastTid = 0;
    for (size_t i = 0; i < in_.device.size(); ++i) {
      const DeviceEvent& e = in_.device[i];
      if (e.tid && e.tid != lastTid) hostThreads.insert(lastTid = e.tid);
      const std::pair<uint32_t, uint32_t> stream{e.deviceId, e.streamId};
      if (stream != lastStream) streams.insert(lastStream = stream);
    }
    for (size_t i = 0; i < in_.scopes.size(); ++i) hostThreads.insert(in_.scopes[i].tid);
    beginEvent();
    out_.raw(R"({"ph":"M","name":"process_name","pid":)");
    out_.integer(req_.pid);
    out_.raw(R"(,"args":{"name":"Host process )");
    out_.integer(req_.pid);
    out_.raw("\"}}");
    for (uint32_t tid : hostThreads) trackName(req_.pid, tid, "thread ", tid);
    std::set<uint32_t> devices;
    for (const auto& ds : streams) {
      if (devices.insert(ds.first).second) {
        beginEvent();
        out_.raw(R"({"ph":"M","name":"process_name","pid":)");
        out_.integer(kDevicePidBase + ds.first);
        out_.raw(R"(,"args":{"name":"Device )");
        out_.integer(ds.first);
        out_.raw("\"}}");
      }
      trackName(kDevicePidBase + ds.first, ds.second, "stream ", ds.second);
    }
  }

  void trackName(int64_t pid, uint32_t tid, const char* label, uint32_t number) {
    beginEvent();
    out_.raw(R"({"ph":"M","name":"thread_name","pid":)");
    out_.integer(pid);
    out_.raw(R"(,"tid":)");
    out_.integer(tid);
    out_.raw(R"(,"args":{"name":")");
    out_.raw(label);
    out_.integer(number);
    out_.raw("\"}}");
  }

  void writeScope(const ScopeEvent& s) {
    beginEvent();
    out_.raw(R"({"ph":"X","cat":"scope","name":")");
    out_.raw(names_[s.name]);
    out_.raw(R"(","pid":)");
    out_.integer(req_.pid);
    out_.raw(R"(,"tid":)");
    out_.integer(s.tid);
    out_.raw(R"(,"ts":)");
    ts(s.startNs);
    out_.raw(R"(,"dur":)");
    dur(s.startNs, s.endNs);
    out_.raw('}');
  }

  void writeDevice(const DeviceEvent& e, uint64_t flowId) {
    const std::string& name = names_[e.name];
    const int64_t devicePid = kDevicePidBase + e.deviceId;
    beginEvent();
    out_.raw(R"({"ph":"X","cat":")");
    out_.raw(kindName(e.kind));
    out_.raw(R"(","name":")");
    out_.raw(name);
    out_.raw(R"(","pid":)");
    out_.integer(devicePid);
    out_.raw(R"(,"tid":)");
    out_.integer(e.streamId);
    out_.raw(R"(,"ts":)");
    ts(e.startNs);
    out_.raw(R"(,"dur":)");
    dur(e.startNs, e.endNs);
    out_.raw(R"(,"args":{"context":")");
    const ContextText& context = contextText(e.context);
    out_.raw(context.path);
    // Proton's call_stack: ROOT, the context outermost first, then the event's own name.
    out_.raw(R"(","call_stack":[)");
    out_.raw(context.stack);
    out_.raw(",\"");
    out_.raw(name);
    out_.raw(R"("],"correlation":)");
    out_.integer(e.correlation);
    out_.raw(R"(,"device":)");
    out_.integer(e.deviceId);
    writeLaunchArgs(e);
    out_.raw("}}");
    if (!e.tid) return;  // launch not seen: no host side to draw
    writeLaunch(e, name, devicePid, flowId);
  }

  void writeLaunchArgs(const DeviceEvent& e) {
    const LaunchConfig& c = in_.contexts.configs()[e.config];
    if (static_cast<RecordKind>(e.kind) == RecordKind::Kernel) {
      out_.raw(R"(,"grid":[)");
      numbers(c.grid, 3);
      out_.raw(R"(],"block":[)");
      numbers(c.block, 3);
      out_.raw(R"(],"registers":)");
      out_.integer(c.registers);
      out_.raw(R"(,"static_shared_memory":)");
      out_.integer(c.staticSharedMemory);
      out_.raw(R"(,"dynamic_shared_memory":)");
      out_.integer(c.dynamicSharedMemory);
    } else {
      out_.raw(R"(,"bytes":)");
      out_.integer(c.bytes);
    }
    if (in_.extras.empty()) return;
    auto extra = in_.extras.find(e.correlation);
    if (extra == in_.extras.end()) return;
    for (const auto& m : extra->second) {
      out_.raw(",\"");
      out_.raw(names_[m.first]);
      out_.raw("\":");
      out_.number(m.second, false);
    }
  }

  // A short slice marks the launch on the host thread; the flow arrow binds to it.
  void writeLaunch(const DeviceEvent& e, const std::string& name, int64_t devicePid, uint64_t flowId) {
    beginEvent();
    out_.raw(R"({"ph":"X","cat":"launch","name":"launch )");
    out_.raw(name);
    out_.raw(R"(","pid":)");
    out_.integer(req_.pid);
    out_.raw(R"(,"tid":)");
    out_.integer(e.tid);
    out_.raw(R"(,"ts":)");
    ts(e.launchNs);
    out_.raw(R"(,"dur":1.0})");
    beginEvent();
    out_.raw(R"({"ph":"s","cat":"launch","name":"launch","id":)");
    out_.integer(flowId);
    out_.raw(R"(,"pid":)");
    out_.integer(req_.pid);
    out_.raw(R"(,"tid":)");
    out_.integer(e.tid);
    out_.raw(R"(,"ts":)");
    ts(e.launchNs);
    out_.raw('}');
    beginEvent();
    out_.raw(R"({"ph":"f","bp":"e","cat":"launch","name":"launch","id":)");
    out_.integer(flowId);
    out_.raw(R"(,"pid":)");
    out_.integer(devicePid);
    out_.raw(R"(,"tid":)");
    out_.integer(e.streamId);
    out_.raw(R"(,"ts":)");
    ts(e.startNs);
    out_.raw('}');
  }

  void numbers(const int32_t* v, int n) {
    for (int i = 0; i < n; ++i) {
      if (i) out_.raw(',');
      out_.integer(v[i]);
    }
  }

  // A context node's names from the root, escaped: "a/b/c" (args.context) and "ROOT","a","b","c"
  // (call_stack, without the event's name). Built once per context node that events name, not for
  // every ancestor: that would cost the square of the depth on a deep chain.
  struct ContextText {
    std::string path;
    std::string stack;
  };

  const ContextText& contextText(uint32_t id) {
    if (id < known_.size() && known_[id]) return texts_[id];
    const auto& nodes = in_.contexts.nodes();
    if (nodes.size() > known_.size()) {
      known_.resize(nodes.size(), 0);
      texts_.resize(nodes.size());
    }
    std::vector<uint32_t> chain;  // innermost first
    for (uint32_t cur = id; cur != Tree::kRoot; cur = nodes[cur].parent) chain.push_back(nodes[cur].name);
    ContextText& text = texts_[id];
    text.stack = "\"ROOT\"";
    for (size_t i = chain.size(); i-- > 0;) {
      const std::string& name = names_[chain[i]];
      text.path += name;
      if (i) text.path += '/';
      text.stack += ",\"";
      text.stack += name;
      text.stack += '"';
    }
    known_[id] = 1;
    return text;
  }

  const ChromeTraceInput& in_;
  const OutputRequest& req_;
  JsonOut& out_;
  EscapedNames names_;
  std::vector<ContextText> texts_;
  std::vector<uint8_t> known_;
  bool first_ = true;
};

}  // namespace

uint64_t writeChromeTrace(const ChromeTraceInput& input, const OutputRequest& request, AtomicOutFile& file) {
  JsonOut out(file);
  ChromeTraceWriter(input, request, out).write();
  return input.device.size();
}

}  // namespace ftp
