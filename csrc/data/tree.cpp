#include "data/tree.h"

#include <cstring>
#include <string>

#include "core/strings.h"

namespace ftp {

bool LaunchConfig::operator==(const LaunchConfig& o) const {
  return std::memcmp(grid, o.grid, sizeof grid) == 0 && std::memcmp(block, o.block, sizeof block) == 0 &&
         registers == o.registers && staticSharedMemory == o.staticSharedMemory &&
         dynamicSharedMemory == o.dynamicSharedMemory && bytes == o.bytes;
}

void NodeMetrics::add(uint32_t metric, double value) {
  for (auto& entry : user) {
    if (entry.first == metric) {
      entry.second += value;
      return;
    }
  }
  user.emplace_back(metric, value);
}

Tree::Tree() {
  nodes_.push_back(TreeNode{kRoot, intern("ROOT"), NodeKind::Root, 0, 0, {}});
  configs_.push_back(LaunchConfig{});  // index 0: "no config"
}

void Tree::reset() {
  std::vector<TreeNode>(nodes_.begin(), nodes_.begin() + 1).swap(nodes_);
  std::unordered_map<Key, uint32_t, KeyHash>().swap(children_);
  std::unordered_map<uint32_t, std::vector<Property>>().swap(properties_);
  std::vector<LaunchConfig>(configs_.begin(), configs_.begin() + 1).swap(configs_);
  std::unordered_map<LaunchConfig, uint32_t, ConfigHash>().swap(configIds_);
}

void Tree::zeroMetrics() {
  for (TreeNode& n : nodes_) n.metrics = NodeMetrics{};
  properties_.clear();
}

void Tree::copyForWrite(const Tree& from) {
  nodes_ = from.nodes_;
  properties_ = from.properties_;
  configs_ = from.configs_;
}

uint32_t Tree::child(uint32_t parent, NodeKind kind, uint32_t name) {
  Key key{parent, name, kind};
  auto it = children_.find(key);
  if (it != children_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(TreeNode{parent, name, kind, 0, 0, {}});
  children_.emplace(key, id);
  return id;
}

size_t Tree::ConfigHash::operator()(const LaunchConfig& c) const {
  size_t h = c.bytes;
  for (int32_t v : {c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.registers,
                    c.staticSharedMemory, c.dynamicSharedMemory})
    h = h * 1000003u ^ static_cast<uint32_t>(v);
  return h;
}

uint32_t Tree::internConfig(const LaunchConfig& config) {
  auto it = configIds_.find(config);
  if (it != configIds_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(configs_.size());
  configs_.push_back(config);
  configIds_.emplace(config, id);
  return id;
}

uint32_t Tree::internConfigOf(const DeviceRecord& r) {
  return internConfig(LaunchConfig{{r.grid[0], r.grid[1], r.grid[2]}, {r.block[0], r.block[1], r.block[2]},
                                   r.registers, r.staticSharedMemory, r.dynamicSharedMemory, r.bytes});
}

const char* nodeKindName(NodeKind kind) {
  static const char* names[] = {"root", "scope", "frame", "state", "kernel",
                                "memcpy", "memset", "line", "device_scope"};
  const size_t k = static_cast<size_t>(kind);
  return k < sizeof names / sizeof names[0] ? names[k] : "scope";
}

NodeKind nodeKindOf(RecordKind kind) {
  switch (kind) {
    case RecordKind::Memcpy: return NodeKind::Memcpy;
    case RecordKind::Memset: return NodeKind::Memset;
    default: return NodeKind::Kernel;
  }
}

static uint32_t bytesMetricId() {
  static uint32_t id = intern("bytes");
  return id;
}

uint32_t Tree::addRecord(uint32_t context, uint32_t state, const DeviceRecord& record,
                         const LaunchMetadata* meta) {
  uint32_t parent = state ? child(context, NodeKind::State, state) : context;
  uint32_t name = (meta && meta->name) ? meta->name : record.name;
  uint32_t id = child(parent, nodeKindOf(record.kind), name);
  TreeNode& n = nodes_[id];
  n.metrics.count += 1;
  n.metrics.timeNs += record.endNs > record.startNs ? record.endNs - record.startNs : 0;
  n.metrics.deviceId = static_cast<int32_t>(record.deviceId);
  n.metrics.deviceType = static_cast<int32_t>(record.deviceType);
  if (record.mangled) n.mangled = record.mangled;
  if (record.kind != RecordKind::Kernel && record.bytes)
    n.metrics.add(bytesMetricId(), static_cast<double>(record.bytes));
  n.config = internConfigOf(record);
  if (meta)
    for (const auto& m : meta->metrics) n.metrics.add(m.first, m.second);
  return id;
}

}  // namespace ftp
