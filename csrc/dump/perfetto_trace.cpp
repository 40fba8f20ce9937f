#include "dump/perfetto_trace.h"

#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/strings.h"
#include "dump/perfetto_tracks.h"
#include "dump/proto_out.h"

namespace ftp {
namespace {

using namespace wire;

// Field numbers of Perfetto's public protos (trace_packet.proto, track_event.proto, ...).
namespace field {
constexpr uint32_t kTracePacket = 1;
constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12, kSequenceFlags = 13,
                   kTrackDescriptor = 60;
constexpr uint32_t kTrackUuid = 1, kTrackName = 2, kTrackProcess = 3, kTrackThread = 4, kTrackParent = 5,
                   kTrackChildOrdering = 11, kTrackSiblingRank = 12;
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
constexpr uint64_t kSequence = 1;
constexpr uint64_t kExplicitOrder = 3;  // TrackDescriptor.ChildTracksOrdering.EXPLICIT

// Categories and annotation names known up front, interned in the first packet.
const char* const kCategories[] = {"kernel", "memcpy", "memset", "scope", "launch"};
enum Category : uint64_t { kKernel = 1, kMemcpy, kMemset, kScope, kLaunch };
const char* const kAnnotationNames[] = {"context", "correlation", "device", "grid", "block", "registers",
                                        "static_shared_memory", "dynamic_shared_memory", "bytes"};
enum Annotation : uint64_t { kContext = 1, kCorrelation, kDevice, kGrid, kBlock, kRegisters, kStaticShared,
                             kDynamicShared, kBytes, kFirstExtra };

// Track uuids are small numbers (a varint byte or two on every event): the host process,
// then the device tracks, then the threads.
constexpr uint64_t kHostProcessTrack = 1;

// iids handed out on first use, by string table id (or context node id), from a counter that
// interners of one kind of interned data share.
class Interner {
 public:
  explicit Interner(uint64_t* next) : next_(next) {}
  // Returns the iid of `id`, and whether it is new (to be sent in this packet's interned data).
  std::pair<uint64_t, bool> get(uint32_t id) {
    if (id >= iids_.size()) iids_.resize(size_t(id) + 1, 0);
    if (iids_[id]) return {iids_[id], false};
    iids_[id] = (*next_)++;
    return {iids_[id], true};
  }

 private:
  std::vector<uint64_t> iids_;
  uint64_t* next_;
};

// A debug annotation {name_iid, value} with a varint value, encoded in place.
template <uint32_t ValueField>
FTP_INLINE char* putNote(char* p, uint64_t name, uint64_t value) {
  const size_t size = 1 + varintSize(name) + varintSize(tag(ValueField, kVarint)) + varintSize(value);
  p = putVarint(putTag<field::kEventAnnotations, kLength>(p), size);
  p = putVarintField<field::kAnnotationNameIid>(p, name);
  return putVarintField<ValueField>(p, value);
}

// Bound on a packet written into the file's buffer in one piece; larger ones (long interned
// names) go through in pieces.
constexpr size_t kDirectPacket = 1 << 16;

class PerfettoWriter {
 public:
  PerfettoWriter(const ChromeTraceInput& in, const OutputRequest& req, AtomicOutFile& file)
      : in_(in), req_(req), file_(file), plan_(in.device) {}

  void write() {
    writeFirstPacket();
    writeTracks();
    for (size_t i = 0; i < in_.scopes.size(); ++i) writeScope(in_.scopes[i]);
    for (size_t i = 0; i < in_.device.size(); ++i) writeDevice(in_.device[i], i);
  }

 private:
  // A packet of other fields than a track event (descriptors), with the interned data.
  void emit(ProtoMessage& packet) {
    packet.varintField(field::kSequenceId, kSequence);
    if (!interned_.bytes().empty()) packet.messageField(field::kInternedData, interned_);
    frame_.clear();
    frame_.messageField(field::kTracePacket, packet);
    file_.write(frame_.bytes().data(), frame_.bytes().size());
    interned_.clear();
  }

  // One packet around an encoded TrackEvent, with what was interned for it; written straight
  // into the file's buffer. `needsState`: the event refers to interned data.
  void emitEvent(uint64_t timestampNs, const char* event, size_t eventSize, bool needsState) {
    const std::string_view interned = interned_.bytes();
    const size_t internedField = interned.empty() ? 0 : 1 + varintSize(interned.size()) + interned.size();
    const size_t packetSize = 1 + varintSize(timestampNs) + 1 + varintSize(eventSize) + eventSize +
                              (needsState ? 2 : 0) + 2 + internedField;
    if (packetSize + 2 * kMaxVarint > kDirectPacket) return emitEventInPieces(timestampNs, event, eventSize, needsState);
    char* p = file_.space(packetSize + 2 * kMaxVarint);
    p = putVarint(putTag<field::kTracePacket, kLength>(p), packetSize);
    p = putVarintField<field::kTimestamp>(p, timestampNs);
    p = putVarint(putTag<field::kTrackEvent, kLength>(p), eventSize);
    p = putBytes(p, event, eventSize);
    if (needsState) p = putVarintField<field::kSequenceFlags>(p, kNeedsState);
    p = putVarintField<field::kSequenceId>(p, kSequence);
    if (internedField) {
      p = putBytesField<field::kInternedData>(p, interned);
      interned_.clear();
    }
    file_.advance(p);
  }

  void emitEventInPieces(uint64_t timestampNs, const char* event, size_t eventSize, bool needsState) {
    packet_.clear();
    packet_.varintField(field::kTimestamp, timestampNs);
    packet_.bytesField(field::kTrackEvent, std::string_view(event, eventSize));
    if (needsState) packet_.varintField(field::kSequenceFlags, kNeedsState);
    emit(packet_);
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
    track_.varintField(field::kTrackUuid, kHostProcessTrack);
    track_.messageField(field::kTrackProcess, process);
    packet_.clear();
    packet_.messageField(field::kTrackDescriptor, track_);
    packet_.varintField(field::kSequenceFlags, kStateCleared);
    emit(packet_);
  }

  void writeTracks() {
    uint64_t next = kHostProcessTrack + 1;
    writeDeviceTracks(next);
    std::set<uint32_t> threads;
    uint32_t lastTid = 0;
    for (size_t i = 0; i < in_.device.size(); ++i) {
      const uint32_t tid = in_.device[i].tid;
      if (tid && tid != lastTid) threads.insert(lastTid = tid);
    }
    for (size_t i = 0; i < in_.scopes.size(); ++i) threads.insert(in_.scopes[i].tid);
    for (uint32_t tid : threads) {
      ProtoMessage thread;
      thread.varintField(field::kThreadPid, static_cast<uint64_t>(req_.pid));
      thread.varintField(field::kThreadTid, tid);
      thread.bytesField(field::kThreadName, "thread " + std::to_string(tid));
      threadTracks_.emplace(tid, next);
      describeTrack(next++, kHostProcessTrack, "", &thread);
    }
  }

  // A track per device, its stream/graph/lane tracks below it in the plan's order.
  void writeDeviceTracks(uint64_t& next) {
    const std::vector<DeviceTrack>& tracks = plan_.tracks();
    deviceTrackUuids_.resize(tracks.size());
    uint64_t deviceUuid = 0;
    uint64_t rank = 0;
    for (size_t i = 0; i < tracks.size(); ++i) {
      const DeviceTrack& t = tracks[i];
      if (i == 0 || t.device != tracks[i - 1].device) {
        deviceUuid = next++;
        rank = 0;
        describeTrack(deviceUuid, 0, "Device " + std::to_string(t.device), nullptr, true);
      }
      deviceTrackUuids_[i] = next;
      describeTrack(next++, deviceUuid, trackName(t), nullptr, false, rank++);
    }
  }

  static std::string trackName(const DeviceTrack& t) {
    std::string name = "stream " + std::to_string(t.stream);
    if (t.graph) name += " graph " + std::to_string(t.graph);
    if (t.lane) name += " (overlap " + std::to_string(t.lane) + ")";
    return name;
  }

  void describeTrack(uint64_t uuid, uint64_t parent, const std::string& name, const ProtoMessage* thread,
                     bool orderChildren = false, uint64_t rank = 0) {
    track_.clear();
    track_.varintField(field::kTrackUuid, uuid);
    if (!name.empty()) track_.bytesField(field::kTrackName, name);
    if (thread) track_.messageField(field::kTrackThread, *thread);
    if (parent) track_.varintField(field::kTrackParent, parent);
    if (orderChildren) track_.varintField(field::kTrackChildOrdering, kExplicitOrder);
    if (parent && !thread) track_.varintField(field::kTrackSiblingRank, rank);
    packet_.clear();
    packet_.messageField(field::kTrackDescriptor, track_);
    emit(packet_);
  }

  uint64_t threadTrack(uint32_t tid) {
    if (tid != lastTid_) {
      lastTid_ = tid;
      lastThreadTrack_ = threadTracks_.at(tid);
    }
    return lastThreadTrack_;
  }

  uint64_t nameIid(Interner& interner, uint32_t id, const char* prefix = "") {
    auto [iid, fresh] = interner.get(id);
    if (fresh) internEntry(field::kInternedNames, iid, std::string(prefix) + nameOf(id));
    return iid;
  }

  // type, track, category and name of an event, encoded in place.
  static char* putEventHead(char* p, uint64_t type, uint64_t track, uint64_t category, uint64_t name) {
    p = putVarintField<field::kEventType>(p, type);
    p = putVarintField<field::kEventTrackUuid>(p, track);
    if (category) p = putVarintField<field::kEventCategoryIids>(p, category);
    if (name) p = putVarintField<field::kEventNameIid>(p, name);
    return p;
  }

  void writeSliceEnd(uint64_t track, uint64_t timestampNs) {
    char event[2 * (1 + kMaxVarint)];
    emitEvent(timestampNs, event, putEventHead(event, kSliceEnd, track, 0, 0) - event, false);
  }

  void writeScope(const ScopeEvent& s) {
    const uint64_t track = threadTrack(s.tid);
    char event[4 * (1 + kMaxVarint)];
    const uint64_t name = nameIid(eventNames_, s.name);
    emitEvent(s.startNs, event, putEventHead(event, kSliceBegin, track, kScope, name) - event, true);
    writeSliceEnd(track, s.endNs > s.startNs ? s.endNs : s.startNs);
  }

  void writeDevice(const DeviceEvent& e, size_t index) {
    const uint64_t flowId = index + 1;
    const uint64_t track = deviceTrackUuids_[plan_.trackOf(index)];
    const auto kind = static_cast<RecordKind>(e.kind);
    const uint64_t category = kind == RecordKind::Memcpy ? kMemcpy : kind == RecordKind::Memset ? kMemset : kKernel;
    const uint64_t name = nameIid(eventNames_, e.name);
    const std::string_view config = configAnnotations(e);
    const std::vector<std::pair<uint32_t, double>>* extras = extrasOf(e);
    char* p = event_.room(128 + config.size() + (extras ? extras->size() * 32 : 0));
    char* const begin = p;
    p = putEventHead(p, kSliceBegin, track, category, name);
    p = putNote<field::kAnnotationStringIid>(p, kContext, contextIid(e.context));
    p = putNote<field::kAnnotationUint>(p, kCorrelation, e.correlation);
    p = putNote<field::kAnnotationUint>(p, kDevice, e.deviceId);
    p = putBytes(p, config.data(), config.size());
    if (extras) p = putExtras(p, *extras);
    if (e.tid) p = putFixed64Field<field::kEventTerminatingFlowIds>(p, flowId);
    emitEvent(e.startNs, begin, p - begin, true);
    writeSliceEnd(track, e.endNs > e.startNs ? e.endNs : e.startNs);
    if (!e.tid) return;  // launch not seen: no host side to draw
    char launch[4 * (1 + kMaxVarint) + 2 + 8];
    const uint64_t launchName = nameIid(launchNames_, e.name, "launch ");
    p = putEventHead(launch, kInstant, threadTrack(e.tid), kLaunch, launchName);
    p = putFixed64Field<field::kEventFlowIds>(p, flowId);
    emitEvent(e.launchNs, launch, p - launch, true);
  }

  uint64_t contextIid(uint32_t context) {
    auto [iid, fresh] = contextPaths_.get(context);
    if (fresh) {
      entry_.clear();
      entry_.varintField(field::kEntryIid, iid);
      entry_.bytesField(field::kEntryName, contextPath(context));
      interned_.messageField(field::kInternedStrings, entry_);
    }
    return iid;
  }

  const std::vector<std::pair<uint32_t, double>>* extrasOf(const DeviceEvent& e) const {
    if (in_.extras.empty()) return nullptr;
    auto extra = in_.extras.find(e.correlation);
    return extra == in_.extras.end() ? nullptr : &extra->second;
  }

  // Joined metrics as double annotations (at most 2 + 1 + 10 + 1 + 8 bytes each).
  char* putExtras(char* p, const std::vector<std::pair<uint32_t, double>>& extras) {
    for (const auto& m : extras) {
      auto [iid, fresh] = extraNames_.get(m.first);
      if (fresh) internEntry(field::kInternedAnnotationNames, iid, nameOf(m.first));
      uint64_t bits;
      std::memcpy(&bits, &m.second, sizeof bits);
      p = putVarint(putTag<field::kEventAnnotations, kLength>(p), 1 + varintSize(iid) + 1 + 8);
      p = putVarintField<field::kAnnotationNameIid>(p, iid);
      p = putFixed64Field<field::kAnnotationDouble>(p, bits);
    }
    return p;
  }

  template <uint32_t ValueField>
  void annotation(uint64_t name, uint64_t value, ProtoMessage& into) {
    into.end(putNote<ValueField>(into.room(4 * kMaxVarint), name, value));
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
      annotation<field::kAnnotationInt>(kRegisters, static_cast<uint64_t>(int64_t(c.registers)), notes);
      annotation<field::kAnnotationInt>(kStaticShared, static_cast<uint64_t>(int64_t(c.staticSharedMemory)), notes);
      annotation<field::kAnnotationInt>(kDynamicShared, static_cast<uint64_t>(int64_t(c.dynamicSharedMemory)), notes);
    } else {
      annotation<field::kAnnotationUint>(kBytes, c.bytes, notes);
    }
    return notes.bytes();
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
  const DeviceTrackPlan plan_;
  std::vector<uint64_t> deviceTrackUuids_;  // by the plan's track index
  std::unordered_map<uint32_t, uint64_t> threadTracks_;
  uint32_t lastTid_ = ~0u;  // no thread yet
  uint64_t lastThreadTrack_ = 0;
  // Reused buffers: after the first events, writing allocates nothing per event.
  ProtoMessage frame_, packet_, event_, note_, entry_, track_, interned_;
  uint64_t nextName_ = 1, nextString_ = 1, nextExtra_ = kFirstExtra;
  Interner eventNames_{&nextName_}, launchNames_{&nextName_}, contextPaths_{&nextString_}, extraNames_{&nextExtra_};
  std::vector<ProtoMessage> configNotes_;  // by config id * 2 + is-kernel
};

}  // namespace

uint64_t writePerfettoTrace(const ChromeTraceInput& input, const OutputRequest& request, AtomicOutFile& file) {
  PerfettoWriter(input, request, file).write();
  return input.device.size();
}

}  // namespace ftp
