#include "session/session.h"

#include "session/launch_log.h"

#include <mutex>
#include <vector>

#include "core/strings.h"

namespace ftp {

uint32_t Session::graftCaptured(uint32_t launchNode, uint32_t capturedNode) {
  static const uint32_t capturedAt = intern("<captured_at>");
  static const uint32_t unknown = intern("<captured_at:unknown>");
  Tree& tree = contexts();
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
  store_->addRecord(contextNode, state, record, meta, launchNs, tid);
}

}  // namespace ftp
