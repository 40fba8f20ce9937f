#include "dump/chrome_trace.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "core/strings.h"

namespace ftp {
namespace {

// Host tracks use the real pid; each device gets a pid of its own far above real pids.
constexpr int64_t kDevicePidBase = 1ll << 32;

class JsonOut {
 public:
  explicit JsonOut(const std::string& path) : file_(std::fopen(path.c_str(), "w")) {
    if (!file_) throw std::runtime_error("cannot write trace file " + path);
    std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  }
  ~JsonOut() {
    if (file_) std::fclose(file_);
  }
  void raw(const char* text) { std::fputs(text, file_); }
  void str(const std::string& text) {
    std::fputc('"', file_);
    for (unsigned char c : text) {
      if (c == '"' || c == '\\') {
        std::fputc('\\', file_);
        std::fputc(c, file_);
      } else if (c < 0x20) {
        std::fprintf(file_, "\\u%04x", c);
      } else {
        std::fputc(c, file_);
      }
    }
    std::fputc('"', file_);
  }
  void fmt(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    va_list args;
    va_start(args, format);
    std::vfprintf(file_, format, args);
    va_end(args);
  }
  // Starts an event object, with the comma that separates it from the previous one.
  void beginEvent() {
    raw(first_ ? "\n" : ",\n");
    first_ = false;
  }
  void close() {
    if (std::fclose(file_) != 0) {
      file_ = nullptr;
      throw std::runtime_error("error while writing the trace file");
    }
    file_ = nullptr;
  }
  bool failed() const { return std::ferror(file_) != 0; }

 private:
  FILE* file_;
  bool first_ = true;
};

double micros(uint64_t ns, uint64_t origin) {
  return ns >= origin ? double(ns - origin) / 1000.0 : -double(origin - ns) / 1000.0;
}

const char* kindName(uint8_t kind) {
  switch (static_cast<RecordKind>(kind)) {
    case RecordKind::Memcpy: return "memcpy";
    case RecordKind::Memset: return "memset";
    default: return "kernel";
  }
}

void writeMetadataEvents(JsonOut& out, const TraceStore& trace, const TraceWriteOptions& opt) {
  std::set<uint32_t> hostThreads;
  std::set<std::pair<uint32_t, uint32_t>> streams;
  for (size_t i = 0; i < trace.deviceEvents().size(); ++i) {
    const DeviceEvent& e = trace.deviceEvents()[i];
    if (e.tid) hostThreads.insert(e.tid);
    streams.insert({e.deviceId, e.streamId});
  }
  for (size_t i = 0; i < trace.scopeEvents().size(); ++i) hostThreads.insert(trace.scopeEvents()[i].tid);
  out.beginEvent();
  out.fmt(R"({"ph":"M","name":"process_name","pid":%d,"args":{"name":"Host process %d"}})", opt.pid, opt.pid);
  for (uint32_t tid : hostThreads) {
    out.beginEvent();
    out.fmt(R"({"ph":"M","name":"thread_name","pid":%d,"tid":%u,"args":{"name":"thread %u"}})", opt.pid,
            tid, tid);
  }
  std::set<uint32_t> devices;
  for (const auto& ds : streams) {
    if (devices.insert(ds.first).second) {
      out.beginEvent();
      out.fmt(R"({"ph":"M","name":"process_name","pid":%)" PRId64 R"(,"args":{"name":"Device %u"}})",
              kDevicePidBase + ds.first, ds.first);
    }
    out.beginEvent();
    out.fmt(R"({"ph":"M","name":"thread_name","pid":%)" PRId64 R"(,"tid":%u,"args":{"name":"stream %u"}})",
            kDevicePidBase + ds.first, ds.second, ds.second);
  }
}

void writeDeviceEvent(JsonOut& out, Session& session, const DeviceEvent& e, uint64_t flowId,
                      std::unordered_map<uint32_t, std::string>& paths, const TraceWriteOptions& opt) {
  const std::string name = nameOf(e.name);
  auto cached = paths.find(e.context);
  if (cached == paths.end()) cached = paths.emplace(e.context, session.tree.path(e.context)).first;
  const LaunchConfig& c = session.tree.configs()[e.config];
  const int64_t devicePid = kDevicePidBase + e.deviceId;
  out.beginEvent();
  out.fmt(R"({"ph":"X","cat":"%s","name":)", kindName(e.kind));
  out.str(name);
  out.fmt(R"(,"pid":%)" PRId64 R"(,"tid":%u,"ts":%.3f,"dur":%.3f,"args":{"context":)", devicePid,
          e.streamId, micros(e.startNs, opt.originNs), double(e.endNs - e.startNs) / 1000.0);
  out.str(cached->second);
  out.fmt(R"(,"correlation":%u,"device":%u)", e.correlation, e.deviceId);
  if (static_cast<RecordKind>(e.kind) == RecordKind::Kernel)
    out.fmt(R"(,"grid":[%d,%d,%d],"block":[%d,%d,%d],"registers":%d,"static_shared_memory":%d,)"
            R"("dynamic_shared_memory":%d)",
            c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.registers,
            c.staticSharedMemory, c.dynamicSharedMemory);
  else
    out.fmt(R"(,"bytes":%)" PRIu64, c.bytes);
  for (const auto& m : session.traceExtras(e.correlation)) {  // counters and the like
    out.raw(",");
    out.str(nameOf(m.first));
    out.fmt(":%.17g", m.second);
  }
  out.raw("}}");
  if (!e.tid) return;  // launch not seen: no host side to draw
  // A short slice marks the launch on the host thread; the flow arrow binds to it.
  const double launchUs = micros(e.launchNs, opt.originNs);
  out.beginEvent();
  out.raw(R"({"ph":"X","cat":"launch","name":)");
  out.str("launch " + name);
  out.fmt(R"(,"pid":%d,"tid":%u,"ts":%.3f,"dur":1.0})", opt.pid, e.tid, launchUs);
  out.beginEvent();
  out.fmt(R"({"ph":"s","cat":"launch","name":"launch","id":%)" PRIu64 R"(,"pid":%d,"tid":%u,"ts":%.3f})",
          flowId, opt.pid, e.tid, launchUs);
  out.beginEvent();
  out.fmt(R"({"ph":"f","bp":"e","cat":"launch","name":"launch","id":%)" PRIu64
          R"(,"pid":%)" PRId64 R"(,"tid":%u,"ts":%.3f})",
          flowId, devicePid, e.streamId, micros(e.startNs, opt.originNs));
}

}  // namespace

uint64_t writeChromeTrace(Session& session, const TraceWriteOptions& opt) {
  JsonOut out(opt.path);
  std::lock_guard<std::mutex> treeLock(session.tree.mutex());
  std::lock_guard<std::mutex> traceLock(session.trace.mutex());
  const TraceStore& trace = session.trace;
  out.raw(R"({"displayTimeUnit":"ns","otherData":)");
  out.raw(opt.otherDataJson.c_str());
  out.raw(R"(,"traceEvents":[)");
  writeMetadataEvents(out, trace, opt);
  for (size_t i = 0; i < trace.scopeEvents().size(); ++i) {
    const ScopeEvent& s = trace.scopeEvents()[i];
    out.beginEvent();
    out.raw(R"({"ph":"X","cat":"scope","name":)");
    out.str(nameOf(s.name));
    out.fmt(R"(,"pid":%d,"tid":%u,"ts":%.3f,"dur":%.3f})", opt.pid, s.tid, micros(s.startNs, opt.originNs),
            double(s.endNs - s.startNs) / 1000.0);
  }
  std::unordered_map<uint32_t, std::string> paths;
  const auto& events = trace.deviceEvents();
  for (size_t i = 0; i < events.size(); ++i) writeDeviceEvent(out, session, events[i], i + 1, paths, opt);
  out.raw("\n]}\n");
  if (out.failed()) throw std::runtime_error("error while writing trace file " + opt.path);
  out.close();
  const uint64_t written = events.size();
  if (opt.clearAfter) session.trace.clear();
  return written;
}

}  // namespace ftp
