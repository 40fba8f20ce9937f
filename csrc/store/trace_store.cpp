#include "store/trace_store.h"

#include <algorithm>
#include <mutex>

#include "dump/chrome_trace.h"
#include "dump/out_file.h"
#include "dump/perfetto_trace.h"

namespace ftp {
namespace {

// 32 bits tell a launch's graph nodes apart (the Perfetto writer groups replays by node id);
// a nonzero id never folds to 0, which means "not from a graph".
uint32_t foldGraphNode(uint64_t id) {
  const uint32_t folded = static_cast<uint32_t>(id ^ (id >> 32));
  return id && !folded ? 1u : folded;
}

}  // namespace

void TraceStore::addRecord(uint32_t context, uint32_t state, const DeviceRecord& record,
                           const LaunchMetadata* meta, uint64_t launchNs, uint32_t tid) {
  DeviceEvent event{};
  event.startNs = record.startNs;
  event.endNs = record.endNs;
  event.launchNs = launchNs;
  event.name = (meta && meta->name) ? meta->name : record.name;
  event.correlation = record.correlation;
  event.streamId = record.streamId;
  event.tid = tid;
  event.graphNode = foldGraphNode(record.graphNodeId);
  event.deviceId = static_cast<uint16_t>(record.deviceId);
  event.kind = static_cast<uint8_t>(record.kind);
  event.deviceType = static_cast<uint8_t>(record.deviceType);
  std::lock_guard<std::mutex> lock(mutex());
  event.context = state ? tree_.child(context, NodeKind::State, state) : context;
  event.config = tree_.internConfigOf(record);
  device_.push_back(event);
  noteRecorded(record.correlation);
}

uint32_t TraceStore::recordNode(uint32_t context, uint32_t state, RecordKind, uint32_t) {
  return state ? tree_.child(context, NodeKind::State, state) : context;
}

void TraceStore::holdRow(uint32_t, const Metrics&) {}

void TraceStore::closeScope(const ScopeEvent& scope, uint32_t) {
  std::lock_guard<std::mutex> lock(mutex());
  scopes_.push_back(scope);
}

void TraceStore::attachExtra(uint32_t correlation, LaunchExtra&& extra) {
  enableExtras(false);
  std::lock_guard<std::mutex> lock(mutex());
  auto& entry = extras_[correlation];
  for (const auto& m : extra.metrics) {
    auto it = std::find_if(entry.first.begin(), entry.first.end(),
                           [&](const std::pair<uint32_t, double>& e) { return e.first == m.first; });
    if (it == entry.first.end()) entry.first.push_back(m);
    else it->second += m.second;
  }
  entry.second += 1;
}

uint64_t TraceStore::settleExtras() {
  if (!extrasEnabled()) return 0;
  std::lock_guard<std::mutex> lock(mutex());
  dropTaken(extras_);  // their part is written: not counted as unmatched
  std::unordered_map<uint32_t, bool> matched;  // the extras' correlations, usually few
  for (const auto& entry : extras_) matched.emplace(entry.first, false);
  for (size_t i = 0; i < device_.size(); ++i) {
    auto it = matched.find(device_[i].correlation);
    if (it != matched.end()) it->second = true;
  }
  uint64_t unmatched = 0;
  for (const auto& m : matched) {
    if (m.second) continue;
    ++unmatched;
    extras_.erase(m.first);
  }
  return unmatched;
}

std::unordered_map<uint32_t, Metrics> TraceStore::extrasToWrite() const {
  std::unordered_map<uint32_t, Metrics> out;
  for (const auto& entry : extras_) {
    Metrics metrics = entry.second.first;
    for (auto& m : metrics)
      if (isMean(m.first) && entry.second.second) m.second /= entry.second.second;
    out.emplace(entry.first, std::move(metrics));
  }
  return out;
}

// Brings the device events' added shift to `toNs` (a later write may ask for a larger one).
void TraceStore::shiftDeviceEvents(int64_t toNs) {
  const int64_t delta = toNs - shiftedNs_;
  if (!delta) return;
  for (size_t i = 0; i < device_.size(); ++i) {
    DeviceEvent& e = device_[i];
    e.startNs = uint64_t(int64_t(e.startNs) + delta);
    e.endNs = uint64_t(int64_t(e.endNs) + delta);
  }
  shiftedNs_ = toNs;
}

uint64_t TraceStore::write(const OutputRequest& request) {
  AtomicOutFile file(request.path);
  uint64_t written;
  {
    std::lock_guard<std::mutex> lock(mutex());
    shiftDeviceEvents(request.deviceShiftNs);
    const std::unordered_map<uint32_t, Metrics> extras = extrasToWrite();
    ChromeTraceInput input{device_, scopes_, tree_, extras};
    written = format_ == Format::PerfettoProto ? writePerfettoTrace(input, request, file)
                                               : writeChromeTrace(input, request, file);
    file.flush();  // a write error shows here, before anything is cleared
    if (request.part) clearEvents();  // the next part holds only what arrives from now on
  }
  file.commit();  // the fsync waits for the disk outside the lock: launches go on meanwhile
  return written;
}

std::unique_ptr<DataStore> TraceStore::takePart() {
  auto taken = std::make_unique<TraceStore>(format_);
  std::lock_guard<std::mutex> lock(mutex());
  taken->tree_.copyForWrite(tree_);  // names the events' contexts
  taken->meanMetrics_ = meanMetrics_;
  taken->device_.swap(device_);
  taken->scopes_.swap(scopes_);
  taken->shiftedNs_ = shiftedNs_;
  clearEvents();
  // The extras of the taken events go with them: what stays waits for a record still to come,
  // so this map holds one part's launches, not the run's. A look-up per taken event, only while
  // extras are held.
  for (size_t i = 0; i < taken->device_.size() && !extras_.empty(); ++i) {
    auto it = extras_.find(taken->device_[i].correlation);
    if (it == extras_.end()) continue;
    taken->extras_.insert(std::move(*it));
    extras_.erase(it);
  }
  partTaken(extras_);
  return taken;
}

void TraceStore::clearEvents() {
  device_.clear();
  scopes_.clear();
  shiftedNs_ = 0;  // events from now on hold no shift
}

void TraceStore::release() {
  std::lock_guard<std::mutex> lock(mutex());
  clearEvents();
  tree_.reset();
  std::unordered_map<uint32_t, std::pair<Metrics, uint32_t>>().swap(extras_);
}

}  // namespace ftp
