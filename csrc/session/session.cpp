#include "session/session.h"

#include <mutex>
#include <vector>

#include "core/strings.h"

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
  if (data == DataKind::Tree) {
    std::lock_guard<std::mutex> lock(tree.mutex());
    tree.addRecord(contextNode, state, record, meta);
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

}  // namespace ftp
