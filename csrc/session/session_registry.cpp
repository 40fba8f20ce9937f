#include "session/session_registry.h"

#include <stdexcept>
#include <string>

namespace ftp {

int SessionRegistry::create(ContextKind context, DataKind data, TimeSource source, bool active) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (int slot = 0; slot < kMaxSessions; ++slot) {
    if (slots_[slot].load()) continue;
    // Sessions are never deleted: a vendor thread may still hold a pointer while another
    // thread finalizes. Their data is released by the caller once written.
    auto* s = new Session(nextUid_.fetch_add(1), slot, context, data);
    slots_[slot].store(s, std::memory_order_release);
    sourceMask_[int(source)].fetch_or(1u << slot, std::memory_order_acq_rel);
    existsMask_.fetch_or(1u << slot, std::memory_order_acq_rel);
    if (active) activeMask_.fetch_or(1u << slot, std::memory_order_acq_rel);
    return slot;
  }
  throw std::runtime_error("too many concurrent profiling sessions (at most " +
                           std::to_string(kMaxSessions) + ")");
}

void SessionRegistry::setSource(int slot, TimeSource source) {
  if (!at(slot)) return;
  for (auto& mask : sourceMask_) mask.fetch_and(~(1u << slot), std::memory_order_acq_rel);
  sourceMask_[int(source)].fetch_or(1u << slot, std::memory_order_acq_rel);
}

void SessionRegistry::setActive(int slot, bool active) {
  if (!at(slot)) return;
  if (active)
    activeMask_.fetch_or(1u << slot, std::memory_order_acq_rel);
  else
    activeMask_.fetch_and(~(1u << slot), std::memory_order_acq_rel);
}

void SessionRegistry::beginClose(int slot) {
  if (!at(slot)) return;
  setActive(slot, false);
  closingMask_.fetch_or(1u << slot, std::memory_order_acq_rel);
}

void SessionRegistry::clearBits(int slot) {
  closingMask_.fetch_and(~(1u << slot), std::memory_order_acq_rel);
  existsMask_.fetch_and(~(1u << slot), std::memory_order_acq_rel);
  for (auto& mask : sourceMask_) mask.fetch_and(~(1u << slot), std::memory_order_acq_rel);
}

}  // namespace ftp
