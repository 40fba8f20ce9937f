// The calling-context tree of one session: scopes, Python frames, states and kernels as
// nodes, each with exclusive metrics. Writers turn it into Hatchet JSON.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/records.h"

namespace ftp {

// Line: a source line of a kernel (PC sampling); DeviceScope: a scope marked inside a kernel.
enum class NodeKind : uint8_t { Root = 0, Scope, Frame, State, Kernel, Memcpy, Memset, Line, DeviceScope };

// The node a record of `kind` makes, and a kind's name as the tree output spells it
// ("kernel", "device_scope", ...).
NodeKind nodeKindOf(RecordKind kind);
const char* nodeKindName(NodeKind kind);

struct NodeMetrics {
  uint64_t count = 0;
  uint64_t timeNs = 0;
  uint64_t cpuTimeNs = 0;
  int32_t deviceId = -1;
  int32_t deviceType = -1;
  std::vector<std::pair<uint32_t, double>> user;  // (metric name id, summed value)

  void add(uint32_t metric, double value);
};

// A scope metric that is set, not summed (Proton's "(pty)" properties, and "(exc)" metrics given
// text): the last value given to its node stands. A number or a text, written as JSON's.
struct Property {
  uint32_t name;      // interned, the suffix taken off
  bool isText;        // `text` holds the value; else `number`
  double number;
  std::string text;
};

struct TreeNode {
  uint32_t parent;
  uint32_t name;
  NodeKind kind;
  uint32_t mangled = 0;
  uint32_t config = 0;  // last launch config seen (index into Tree::configs, 0 = none)
  NodeMetrics metrics;
};

// Results a backend learns about one launch apart from its activity record (hardware
// counters, PC samples, kernel-side scopes), joined to the launch's kernel node later.
struct LaunchExtra {
  std::vector<std::pair<uint32_t, double>> metrics;  // interned metric name -> value, on the kernel node
  struct Child {
    std::vector<std::pair<NodeKind, uint32_t>> path;  // (kind, interned name) from the kernel node down
    std::vector<std::pair<uint32_t, double>> metrics;
  };
  std::vector<Child> children;
};

class Tree {
 public:
  Tree();
  // Frees every node but the root (after the tree has been written). Caller holds the lock.
  void reset();

  // Zeroes every node's metrics (properties too) and keeps the nodes (threads cache node ids),
  // for periodic parts: the next export holds only what arrived since. Caller holds the lock.
  void zeroMetrics();

  // Copies the nodes, properties and launch configs of `from` (both locks held by the caller), not its
  // lookup maps: the copy is a part's snapshot, only written, never added to.
  void copyForWrite(const Tree& from);

  // Guards every method below; callers batch work under one lock.
  std::mutex& mutex() { return mutex_; }

  static constexpr uint32_t kRoot = 0;

  // Finds or creates the child (kind, name) of parent. Caller holds the lock.
  uint32_t child(uint32_t parent, NodeKind kind, uint32_t name);
  TreeNode& node(uint32_t id) { return nodes_[id]; }
  const std::vector<TreeNode>& nodes() const { return nodes_; }
  uint32_t internConfig(const LaunchConfig& config);
  uint32_t internConfigOf(const DeviceRecord& record);  // the record's geometry and resources
  const std::vector<LaunchConfig>& configs() const { return configs_; }

  // The properties of a node, nullptr when it has none; those of every node that has any.
  // Kept apart from the nodes: few nodes have one, and every node would pay for an empty list.
  // Caller holds the lock.
  const std::vector<Property>* propertiesOf(uint32_t node) const {
    if (properties_.empty()) return nullptr;
    auto it = properties_.find(node);
    return it == properties_.end() ? nullptr : &it->second;
  }
  std::unordered_map<uint32_t, std::vector<Property>>& properties() { return properties_; }

  // Adds one finished record below context node `context` (and state `state`, 0 = none).
  // Returns the record's node. Caller holds the lock.
  uint32_t addRecord(uint32_t context, uint32_t state, const DeviceRecord& record,
                     const LaunchMetadata* meta);

 private:
  struct Key {
    uint32_t parent;
    uint32_t name;
    NodeKind kind;
    bool operator==(const Key& o) const {
      return parent == o.parent && name == o.name && kind == o.kind;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return (size_t(k.parent) * 0x9E3779B97F4A7C15ull) ^ (size_t(k.name) << 3) ^ size_t(k.kind);
    }
  };

  std::mutex mutex_;
  std::vector<TreeNode> nodes_;
  std::unordered_map<Key, uint32_t, KeyHash> children_;
  struct ConfigHash {
    size_t operator()(const LaunchConfig& c) const;
  };

  std::unordered_map<uint32_t, std::vector<Property>> properties_;  // node -> its properties

  std::vector<LaunchConfig> configs_;
  std::unordered_map<LaunchConfig, uint32_t, ConfigHash> configIds_;
};

}  // namespace ftp
