#include "session/session.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "core/strings.h"
#include "data/launch_log.h"

namespace ftp {

uint32_t Session::graftCaptured(uint32_t launchNode, uint32_t capturedNode) {
  static const uint32_t capturedAt = intern("<captured_at>");
  static const uint32_t unknown = intern("<captured_at:unknown>");
  std::lock_guard<std::mutex> lock(tree.mutex());
  if (capturedNode == kUnknownCapture) return tree.child(launchNode, NodeKind::Scope, unknown);
  const uint64_t key = uint64_t(launchNode) << 32 | capturedNode;
  auto it = grafts_.find(key);
  if (it != grafts_.end()) return it->second;
  std::vector<uint32_t> chain;  // capture path, innermost first
  for (uint32_t cur = capturedNode; cur != Tree::kRoot; cur = tree.node(cur).parent) chain.push_back(cur);
  uint32_t node = tree.child(launchNode, NodeKind::Scope, capturedAt);
  for (size_t i = chain.size(); i-- > 0;) {
    const TreeNode& n = tree.node(chain[i]);
    node = tree.child(node, n.kind, n.name);
  }
  grafts_.emplace(key, node);
  return node;
}

void Session::addRecord(uint32_t contextNode, uint32_t state, const DeviceRecord& record,
                        const LaunchMetadata* meta, uint64_t launchNs, uint32_t tid) {
  records.fetch_add(1, std::memory_order_relaxed);
  launch_log::note(*this, slot, contextNode, state, record, meta, launchNs, tid);
  if (data == DataKind::Tree) {
    std::lock_guard<std::mutex> lock(tree.mutex());
    const uint32_t node = tree.addRecord(contextNode, state, record, meta);
    if (!extrasEnabled_.load(std::memory_order_acquire)) return;
    kernelNodeOf_[record.correlation] = node;
    auto early = earlyExtras_.find(record.correlation);
    if (early != earlyExtras_.end()) {
      for (const LaunchExtra& extra : early->second) applyExtra(node, extra);
      earlyExtras_.erase(early);
    }
    return;
  }
  DeviceEvent event{};
  {
    std::lock_guard<std::mutex> lock(tree.mutex());
    event.context = state ? tree.child(contextNode, NodeKind::State, state) : contextNode;
    event.config = tree.internConfig(LaunchConfig{
        {record.grid[0], record.grid[1], record.grid[2]},
        {record.block[0], record.block[1], record.block[2]},
        record.registers, record.staticSharedMemory, record.dynamicSharedMemory, record.bytes});
  }
  event.startNs = record.startNs;
  event.endNs = record.endNs;
  event.launchNs = launchNs;
  event.name = (meta && meta->name) ? meta->name : record.name;
  event.correlation = record.correlation;
  event.streamId = record.streamId;
  event.tid = tid;
  event.deviceId = static_cast<uint16_t>(record.deviceId);
  event.kind = static_cast<uint8_t>(record.kind);
  event.deviceType = static_cast<uint8_t>(record.deviceType);
  std::lock_guard<std::mutex> lock(trace.mutex());
  trace.addDevice(event);
}

void Session::enableExtras() { extrasEnabled_.store(true, std::memory_order_release); }

void Session::attachExtra(uint32_t correlation, LaunchExtra&& extra) {
  enableExtras();
  if (data == DataKind::Trace) {
    // The trace shows one event per launch: only the metrics apply.
    std::lock_guard<std::mutex> lock(extrasMutex_);
    auto& entry = traceExtras_[correlation];
    for (const auto& m : extra.metrics) {
      auto it = std::find_if(entry.first.begin(), entry.first.end(),
                             [&](const std::pair<uint32_t, double>& e) { return e.first == m.first; });
      if (it == entry.first.end()) entry.first.push_back(m);
      else it->second += m.second;
    }
    entry.second += 1;
    return;
  }
  std::lock_guard<std::mutex> lock(tree.mutex());
  auto known = kernelNodeOf_.find(correlation);
  if (known != kernelNodeOf_.end()) applyExtra(known->second, extra);
  else earlyExtras_[correlation].push_back(std::move(extra));
}

void Session::applyExtra(uint32_t node, const LaunchExtra& extra) {
  addMetrics(node, extra.metrics);
  for (const auto& c : extra.children) {
    uint32_t at = node;
    for (const auto& step : c.path) at = tree.child(at, step.first, step.second);
    addMetrics(at, c.metrics);
  }
}

void Session::addMetrics(uint32_t node, const std::vector<std::pair<uint32_t, double>>& metrics) {
  NodeMetrics& target = tree.node(node).metrics;
  for (const auto& m : metrics) {
    target.add(m.first, m.second);
    if (!meanMetrics_.empty() && meanMetrics_.count(m.first)) meanAttachments_[uint64_t(node) << 32 | m.first] += 1;
  }
}

void Session::setMeanMetrics(const std::vector<uint32_t>& names) {
  std::lock_guard<std::mutex> lock(tree.mutex());
  meanMetrics_.insert(names.begin(), names.end());
}

double Session::metricValue(uint32_t node, uint32_t metric, double sum) const {
  if (meanMetrics_.empty() || !meanMetrics_.count(metric)) return sum;
  auto it = meanAttachments_.find(uint64_t(node) << 32 | metric);
  return it == meanAttachments_.end() || it->second == 0 ? sum : sum / it->second;
}

std::vector<std::pair<uint32_t, double>> Session::traceExtras(uint32_t correlation) {
  if (!extrasEnabled_.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> lock(extrasMutex_);
  auto it = traceExtras_.find(correlation);
  if (it == traceExtras_.end()) return {};
  std::vector<std::pair<uint32_t, double>> out = it->second.first;
  for (auto& m : out)
    if (meanMetrics_.count(m.first) && it->second.second) m.second /= it->second.second;
  return out;
}

uint64_t Session::settleExtras() {
  if (!extrasEnabled_.load(std::memory_order_acquire)) return 0;  // plain sessions: nothing to settle
  if (data == DataKind::Trace) {
    std::unordered_set<uint32_t> seen;
    {
      std::lock_guard<std::mutex> lock(trace.mutex());
      const auto& events = trace.deviceEvents();
      for (size_t i = 0; i < events.size(); ++i) seen.insert(events[i].correlation);
    }
    std::lock_guard<std::mutex> lock(extrasMutex_);
    uint64_t unmatched = 0;
    for (auto it = traceExtras_.begin(); it != traceExtras_.end();) {
      if (seen.count(it->first)) {
        ++it;
      } else {
        ++unmatched;
        it = traceExtras_.erase(it);
      }
    }
    return unmatched;
  }
  std::lock_guard<std::mutex> lock(tree.mutex());
  const uint64_t unmatched = earlyExtras_.size();
  if (unmatched) {
    const uint32_t holder = tree.child(Tree::kRoot, NodeKind::Scope, intern("<unmatched launch>"));
    for (const auto& entry : earlyExtras_)
      for (const LaunchExtra& extra : entry.second) applyExtra(holder, extra);
    earlyExtras_.clear();
  }
  return unmatched;
}

}  // namespace ftp
