#include "dump/perfetto_trace.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/strings.h"
#include "dump/proto_out.h"

namespace ftp {
namespace {

// Field numbers of Perfetto's public protos (trace_packet.proto, track_event.proto, ...).
namespace field {
constexpr uint32_t kTracePacket = 1;
constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12, kSequenceFlags = 13,
                   kTrackDescriptor = 60;
constexpr uint32_t kTrackUuid = 1, kTrackName = 2, kTrackProcess = 3, kTrackThread = 4, kTrackParent = 5;
constexpr uint32_t kProcessPid = 1, kProcessName = 6;
constexpr uint32_t kThreadPid = 1, kThreadTid = 2, kThreadName = 5;
constexpr uint32_t kEventCategoryIids = 3, kEventAnnotations = 4, kEventType = 9, kEventNameIid = 10,
                   kEventTrackUuid = 11, kEventFlowIds = 47, kEventTerminatingFlowIds = 48;
constexpr uint32_t kAnnotationNameIid = 1, kAnnotationUint = 3, kAnnotationInt = 4, kAnnotationDouble = 5,
                   kAnnotationStringIid = 17, kAnnotationArray = 12;
constexpr uint32_t kInternedCategories = 1, kInternedNames = 2, kInternedAnnotationNames = 3,
                   kInternedStrings = 29;
constexpr uint32_t kEntryIid = 1, kEntryName = 2;
}  // namespace field

constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3;
constexpr uint64_t kStateCleared = 1, kNeedsState = 2;
constexpr uint32_t kSequence = 1;

// Categories and annotation names known up front, interned in the first packet.
const char* const kCategories[] = {"kernel", "memcpy", "memset", "scope", "launch"};
enum Category : uint64_t { kKernel = 1, kMemcpy, kMemset, kScope, kLaunch };
const char* const kAnnotationNames[] = {"context", "correlation", "device", "grid", "block", "registers",
                                        "static_shared_memory", "dynamic_shared_memory", "bytes"};
enum Annotation : uint64_t { kContext = 1, kCorrelation, kDevice, kGrid, kBlock, kRegisters, kStaticShared,
                             kDynamicShared, kBytes, kFirstExtra };

uint64_t hostProcessTrack() { return 1; }
uint64_t threadTrack(uint32_t tid) { return (1ull << 56) | tid; }
uint64_t deviceTrack(uint32_t device) { return (2ull << 56) | device; }
uint64_t streamTrack(uint32_t device, uint32_t stream) { return (3ull << 56) | (uint64_t(device) << 32) | stream; }

// iids handed out on first use, by string table id (or context node id).
class Interner {
 public:
  // Returns the iid of `id`, and whether it is new (to be sent in this packet's interned data).
  std::pair<uint64_t, bool> get(uint32_t id) {
    if (id >= iids_.size()) iids_.resize(size_t(id) + 1, 0);
    if (iids_[id]) return {iids_[id], false};
    iids_[id] = next_++;
    return {iids_[id], true};
  }
  explicit Interner(uint64_t first = 1) : next_(first) {}

 private:
  std::vector<uint64_t> iids_;
  uint64_t next_;
};

class PerfettoWriter {
 public:
  PerfettoWriter(const ChromeTraceInput& in, const OutputRequest& req, AtomicOutFile& file)
      : in_(in), req_(req), file_(file), extraNames_(kFirstExtra) {}

  void write() {
    writeFirstPacket();
    writeTracks();
    for (size_t i = 0; i < in_.scopes.size(); ++i) writeScope(in_.scopes[i]);
    for (size_t i = 0; i < in_.device.size(); ++i) writeDevice(in_.device[i], i + 1);
  }

 private:
  void emit(ProtoMessage& packet, bool withInterned) {
    packet.varintField(field::kSequenceId, kSequence);
    if (withInterned && !interned_.bytes().empty()) packet.messageField(field::kInternedData, interned_);
    frame_.clear();
    frame_.messageField(field::kTracePacket, packet);
    file_.write(frame_.bytes().data(), frame_.bytes().size());
    interned_.clear();
  }

  void internEntry(uint32_t kind, uint64_t iid, std::string_view name) {
    entry_.clear();
    entry_.varintField(field::kEntryIid, iid);
    entry_.bytesField(field::kEntryName, name);
    interned_.messageField(kind, entry_);
  }

  void writeFirstPacket() {
    for (uint64_t i = 0; i < sizeof kCategories / sizeof *kCategories; ++i)
      internEntry(field::kInternedCategories, i + 1, kCategories[i]);
    for (uint64_t i = 0; i < sizeof kAnnotationNames / sizeof *kAnnotationNames; ++i)
      internEntry(field::kInternedAnnotationNames, i + 1, kAnnotationNames[i]);
    ProtoMessage process;
    process.varintField(field::kProcessPid, static_cast<uint64_t>(req_.pid));
    process.bytesField(field::kProcessName, "Host process " + std::to_string(req_.pid));
    track_.clear();
    track_.varintField(field::kTrackUuid, hostProcessTrack());
    track_.messageField(field::kTrackProcess, process);
    packet_.clear();
    packet_.messageField(field::kTrackDescriptor, track_);
    packet_.varintField(field::kSequenceFlags, kStateCleared);
    emit(packet_, true);
  }

  void writeTracks() {
    std::set<uint32_t> threads;
    std::set<std::pair<uint32_t, uint32_t>> streams;  // (device, stream)
    for (size_t i = 0; i < in_.device.size(); ++i) {
      const DeviceEvent& e = in_.device[i];
      if (e.tid) threads.insert(e.tid);
      streams.insert({e.deviceId, e.streamId});
    }
    for (size_t i = 0; i < in_.scopes.size(); ++i) threads.insert(in_.scopes[i].tid);
    for (uint32_t tid : threads) {
      ProtoMessage thread;
      thread.varintField(field::kThreadPid, static_cast<uint64_t>(req_.pid));
      thread.varintField(field::kThreadTid, tid);
      thread.bytesField(field::kThreadName, "thread " + std::to_string(tid));
      describeTrack(threadTrack(tid), hostProcessTrack(), nullptr, &thread);
    }
    std::set<uint32_t> devices;
    for (const auto& ds : streams) {
      if (devices.insert(ds.first).second) describeTrack(deviceTrack(ds.first), 0, ("Device " + std::to_string(ds.first)).c_str(), nullptr);
      describeTrack(streamTrack(ds.first, ds.second), deviceTrack(ds.first),
                    ("stream " + std::to_string(ds.second)).c_str(), nullptr);
    }
  }

  void describeTrack(uint64_t uuid, uint64_t parent, const char* name, const ProtoMessage* thread) {
    track_.clear();
    track_.varintField(field::kTrackUuid, uuid);
    if (name) track_.bytesField(field::kTrackName, name);
    if (thread) track_.messageField(field::kTrackThread, *thread);
    if (parent) track_.varintField(field::kTrackParent, parent);
    packet_.clear();
    packet_.messageField(field::kTrackDescriptor, track_);
    emit(packet_, false);
  }

  uint64_t nameIid(Interner& interner, uint32_t id, std::string_view prefix = {}) {
    auto [iid, fresh] = interner.get(id);
    if (fresh) internEntry(field::kInternedNames, iid, std::string(prefix) + nameOf(id));
    return iid;
  }

  // The event's own fields; `type` begin/end/instant.
  void beginEvent(uint64_t type, uint64_t track, uint64_t category, uint64_t name) {
    event_.clear();
    event_.varintField(field::kEventType, type);
    event_.varintField(field::kEventTrackUuid, track);
    if (category) event_.varintField(field::kEventCategoryIids, category);
    if (name) event_.varintField(field::kEventNameIid, name);
  }

  // One packet around event_, written in pieces so the event's bytes are copied once.
  void emitEvent(uint64_t timestampNs) {
    head_.clear();
    head_.varintField(field::kTimestamp, timestampNs);
    head_.lengthField(field::kTrackEvent, event_.bytes().size());
    tail_.clear();
    tail_.varintField(field::kSequenceFlags, kNeedsState);
    tail_.varintField(field::kSequenceId, kSequence);
    if (!interned_.bytes().empty()) tail_.messageField(field::kInternedData, interned_);
    frame_.clear();
    frame_.lengthField(field::kTracePacket, head_.bytes().size() + event_.bytes().size() + tail_.bytes().size());
    for (const ProtoMessage* piece : {&frame_, &head_, &event_, &tail_})
      file_.write(piece->bytes().data(), piece->bytes().size());
    interned_.clear();
  }

  void writeScope(const ScopeEvent& s) {
    const uint64_t track = threadTrack(s.tid);
    beginEvent(kSliceBegin, track, kScope, nameIid(eventNames_, s.name));
    emitEvent(s.startNs);
    beginEvent(kSliceEnd, track, 0, 0);
    emitEvent(s.endNs > s.startNs ? s.endNs : s.startNs);
  }

  void writeDevice(const DeviceEvent& e, uint64_t flowId) {
    const uint64_t track = streamTrack(e.deviceId, e.streamId);
    const auto kind = static_cast<RecordKind>(e.kind);
    const uint64_t category = kind == RecordKind::Memcpy ? kMemcpy : kind == RecordKind::Memset ? kMemset : kKernel;
    beginEvent(kSliceBegin, track, category, nameIid(eventNames_, e.name));
    writeAnnotations(e);
    if (e.tid) event_.fixed64Field(field::kEventTerminatingFlowIds, flowId);
    emitEvent(e.startNs);
    beginEvent(kSliceEnd, track, 0, 0);
    emitEvent(e.endNs > e.startNs ? e.endNs : e.startNs);
    if (!e.tid) return;  // launch not seen: no host side to draw
    beginEvent(kInstant, threadTrack(e.tid), kLaunch, nameIid(launchNames_, e.name, "launch "));
    event_.fixed64Field(field::kEventFlowIds, flowId);
    emitEvent(e.launchNs);
  }

  void annotation(uint64_t name, uint32_t valueField, uint64_t value, ProtoMessage* into = nullptr) {
    note_.clear();
    note_.varintField(field::kAnnotationNameIid, name);
    note_.varintField(valueField, value);
    (into ? *into : event_).messageField(field::kEventAnnotations, note_);
  }

  void arrayAnnotation(uint64_t name, const int32_t (&values)[3], ProtoMessage& into) {
    note_.clear();
    note_.varintField(field::kAnnotationNameIid, name);
    for (int32_t v : values) {
      entry_.clear();
      entry_.sintField(field::kAnnotationInt, v);
      note_.messageField(field::kAnnotationArray, entry_);
    }
    into.messageField(field::kEventAnnotations, note_);
  }

  // The launch-configuration annotations, encoded once per configuration and kind of record.
  std::string_view configAnnotations(const DeviceEvent& e) {
    const bool kernel = static_cast<RecordKind>(e.kind) == RecordKind::Kernel;
    const size_t key = size_t(e.config) * 2 + kernel;
    if (key >= configNotes_.size()) configNotes_.resize(key + 1);
    ProtoMessage& notes = configNotes_[key];
    if (!notes.bytes().empty()) return notes.bytes();
    const LaunchConfig& c = in_.contexts.configs()[e.config];
    if (kernel) {
      arrayAnnotation(kGrid, c.grid, notes);
      arrayAnnotation(kBlock, c.block, notes);
      annotation(kRegisters, field::kAnnotationInt, static_cast<uint64_t>(int64_t(c.registers)), &notes);
      annotation(kStaticShared, field::kAnnotationInt, static_cast<uint64_t>(int64_t(c.staticSharedMemory)), &notes);
      annotation(kDynamicShared, field::kAnnotationInt, static_cast<uint64_t>(int64_t(c.dynamicSharedMemory)), &notes);
    } else {
      annotation(kBytes, field::kAnnotationUint, c.bytes, &notes);
    }
    return notes.bytes();
  }

  void writeAnnotations(const DeviceEvent& e) {
    auto [pathIid, freshPath] = contextPaths_.get(e.context);
    if (freshPath) {
      entry_.clear();
      entry_.varintField(field::kEntryIid, pathIid);
      entry_.bytesField(field::kEntryName, contextPath(e.context));
      interned_.messageField(field::kInternedStrings, entry_);
    }
    annotation(kContext, field::kAnnotationStringIid, pathIid);
    annotation(kCorrelation, field::kAnnotationUint, e.correlation);
    annotation(kDevice, field::kAnnotationUint, e.deviceId);
    event_.append(configAnnotations(e));
    if (in_.extras.empty()) return;
    auto extra = in_.extras.find(e.correlation);
    if (extra == in_.extras.end()) return;
    for (const auto& m : extra->second) {
      auto [iid, fresh] = extraNames_.get(m.first);
      if (fresh) internEntry(field::kInternedAnnotationNames, iid, nameOf(m.first));
      note_.clear();
      note_.varintField(field::kAnnotationNameIid, iid);
      note_.doubleField(field::kAnnotationDouble, m.second);
      event_.messageField(field::kEventAnnotations, note_);
    }
  }

  std::string contextPath(uint32_t id) const {
    std::vector<uint32_t> chain;  // innermost first
    const auto& nodes = in_.contexts.nodes();
    for (uint32_t cur = id; cur != Tree::kRoot; cur = nodes[cur].parent) chain.push_back(nodes[cur].name);
    std::string path;
    for (size_t i = chain.size(); i-- > 0;) {
      path += nameOf(chain[i]);
      if (i) path += '/';
    }
    return path;
  }

  const ChromeTraceInput& in_;
  const OutputRequest& req_;
  AtomicOutFile& file_;
  // Reused buffers: after the first events, writing allocates nothing per event.
  ProtoMessage frame_, packet_, head_, event_, tail_, note_, entry_, track_, interned_;
  Interner eventNames_, launchNames_{1u << 30}, contextPaths_, extraNames_;
  std::vector<ProtoMessage> configNotes_;  // by config id * 2 + is-kernel
};

}  // namespace

uint64_t writePerfettoTrace(const ChromeTraceInput& input, const OutputRequest& request, AtomicOutFile& file) {
  PerfettoWriter(input, request, file).write();
  return input.device.size();
}

}  // namespace ftp
