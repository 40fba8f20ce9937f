#include "store/tree_store.h"

#include <algorithm>
#include <mutex>

#include "core/strings.h"
#include "dump/hatchet_writer.h"
#include "dump/out_file.h"

namespace ftp {

void TreeStore::addRecord(uint32_t context, uint32_t state, const DeviceRecord& record,
                          const LaunchMetadata* meta, uint64_t, uint32_t) {
  std::lock_guard<std::mutex> lock(mutex());
  const uint32_t node = tree_.addRecord(context, state, record, meta);
  if (!extrasEnabled()) return;
  if (nodesByCorrelation()) {
    kernelNodeOf_[record.correlation] = node;
    noteRecorded(record.correlation);
  }
  auto early = earlyExtras_.find(record.correlation);
  if (early != earlyExtras_.end()) {
    for (const LaunchExtra& extra : early->second) applyExtra(node, extra);
    earlyExtras_.erase(early);
  }
}

// One name holds one value per node, written once under that name: a sum and a property of the
// same name on one node cannot both stand. Proton raises there (and on any change of a value's
// type); here the scope is already entered, and raising would leave it open, so the last value
// given stands and the conflict is counted (finalize warns of it, and the metadata says it).
void TreeStore::addScopeMetrics(uint32_t node, const ScopeMetrics& metrics) {
  std::lock_guard<std::mutex> lock(mutex());
  auto& allProperties = tree_.properties();
  const auto owned = allProperties.find(node);  // looked up once for all the sums below
  std::vector<Property>* held = owned == allProperties.end() ? nullptr : &owned->second;
  for (const auto& m : metrics.sums) {
    if (held) {
      auto it = std::find_if(held->begin(), held->end(), [&](const Property& p) { return p.name == m.first; });
      if (it != held->end()) {
        held->erase(it);
        noteConflict(m.first);
      }
    }
    tree_.node(node).metrics.add(m.first, m.second);
  }
  if (metrics.properties.empty()) return;
  auto& sums = tree_.node(node).metrics.user;
  auto& list = allProperties[node];
  for (const Property& p : metrics.properties) {
    for (auto it = sums.begin(); it != sums.end(); ++it) {
      if (it->first != p.name) continue;
      sums.erase(it);
      noteConflict(p.name);
      break;
    }
    bool found = false;
    for (Property& have : list) {
      if (have.name != p.name) continue;
      have = p;  // a property keeps the last value given (Proton's rule for repeats)
      found = true;
      break;
    }
    if (!found) list.push_back(p);
  }
}

void TreeStore::noteConflict(uint32_t name) {
  if (!conflicts_.count++) conflicts_.firstName = name;
}

DataStore::Conflicts TreeStore::metricConflicts() {
  std::lock_guard<std::mutex> lock(mutex());
  return conflicts_;
}

uint32_t TreeStore::recordNode(uint32_t context, uint32_t state, RecordKind kind, uint32_t name) {
  const uint32_t parent = state ? tree_.child(context, NodeKind::State, state) : context;
  return tree_.child(parent, nodeKindOf(kind), name);
}

void TreeStore::holdRow(uint32_t node, const Metrics& metrics) {
  NodeMetrics& target = tree_.node(node).metrics;
  target.count += 1;
  for (const auto& m : metrics) target.add(m.first, m.second);
}

void TreeStore::closeScope(const ScopeEvent& scope, uint32_t node) {
  if (node == kNoNode) return;  // the tree keeps CPU time only, of cpu-timed shadow scopes
  std::lock_guard<std::mutex> lock(mutex());
  tree_.node(node).metrics.cpuTimeNs += scope.endNs - scope.startNs;
}

size_t TreeStore::nodesKeptForExtras() {
  std::lock_guard<std::mutex> lock(mutex());
  return kernelNodeOf_.size();
}

void TreeStore::attachExtra(uint32_t correlation, LaunchExtra&& extra) {
  enableExtras(false);  // its record, if still to come, finds it
  // Only the current part's kernels are known: one of a taken part waits, as if its record were
  // still to come, and is dropped at the next part's end (dropTaken), not added to a live node
  // whose earlier metrics went with that part.
  std::lock_guard<std::mutex> lock(mutex());
  auto known = kernelNodeOf_.find(correlation);
  if (known != kernelNodeOf_.end()) applyExtra(known->second, extra);
  else earlyExtras_[correlation].push_back(std::move(extra));
}

void TreeStore::applyExtra(uint32_t node, const LaunchExtra& extra) {
  addMetrics(node, extra.metrics);
  for (const auto& c : extra.children) {
    uint32_t at = node;
    for (const auto& step : c.path) at = tree_.child(at, step.first, step.second);
    addMetrics(at, c.metrics);
  }
}

void TreeStore::addMetrics(uint32_t node, const Metrics& metrics) {
  NodeMetrics& target = tree_.node(node).metrics;
  for (const auto& m : metrics) {
    target.add(m.first, m.second);
    if (isMean(m.first)) meanAttachments_[uint64_t(node) << 32 | m.first] += 1;
  }
}

double TreeStore::metricValue(uint32_t node, uint32_t metric, double sum) const {
  if (!isMean(metric)) return sum;
  auto it = meanAttachments_.find(uint64_t(node) << 32 | metric);
  return it == meanAttachments_.end() || it->second == 0 ? sum : sum / it->second;
}

uint64_t TreeStore::settleExtras() {
  if (!extrasEnabled()) return 0;  // plain sessions: nothing to settle
  std::lock_guard<std::mutex> lock(mutex());
  dropTaken(earlyExtras_);  // their part is written: no <unmatched launch> of this one
  const uint64_t unmatched = earlyExtras_.size();
  if (unmatched) {
    const uint32_t holder = tree_.child(Tree::kRoot, NodeKind::Scope, intern("<unmatched launch>"));
    for (const auto& entry : earlyExtras_)
      for (const LaunchExtra& extra : entry.second) applyExtra(holder, extra);
    earlyExtras_.clear();
  }
  return unmatched;
}

uint64_t TreeStore::write(const OutputRequest& request) {
  AtomicOutFile file(request.path);
  uint64_t written;
  {
    std::lock_guard<std::mutex> lock(mutex());
    HatchetInput input{tree_, [this](uint32_t node, uint32_t metric, double sum) {
                         return metricValue(node, metric, sum);
                       }};
    written = writeHatchet(input, request, file);
    file.flush();  // a write error shows here, before anything is zeroed
    if (request.part) {  // the next part holds only what arrives from now on
      tree_.zeroMetrics();
      meanAttachments_.clear();
    }
  }
  file.commit();  // the fsync waits for the disk outside the lock: launches go on meanwhile
  return written;
}

std::unique_ptr<DataStore> TreeStore::takePart() {
  auto taken = std::make_unique<TreeStore>();
  std::lock_guard<std::mutex> lock(mutex());
  taken->tree_.copyForWrite(tree_);
  taken->meanMetrics_ = meanMetrics_;
  taken->meanAttachments_.swap(meanAttachments_);
  tree_.zeroMetrics();  // as a written part: the next one holds only what arrives from now on
  // The taken kernels' nodes are forgotten, so this map holds one part's launches, not the run's;
  // extras still waiting for a record of the taken part will not see one.
  kernelNodeOf_.clear();
  partTaken(earlyExtras_);
  return taken;
}

void TreeStore::release() {
  std::lock_guard<std::mutex> lock(mutex());
  tree_.reset();
  std::unordered_map<uint32_t, uint32_t>().swap(kernelNodeOf_);
  std::unordered_map<uint32_t, std::vector<LaunchExtra>>().swap(earlyExtras_);
  std::unordered_map<uint64_t, uint32_t>().swap(meanAttachments_);
}

}  // namespace ftp
