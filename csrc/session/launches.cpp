#include "session/launches.h"

#include <vector>

namespace ftp {

PendingLaunches::Capture PendingLaunches::takeCaptured(uint32_t correlation, PendingLaunch& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  PendingLaunch* entry = map_.get(correlation);
  if (!entry) return Capture::Unknown;
  if (entry->multi) return Capture::GraphLaunch;  // a graph launch does not create nodes of its own
  out = *entry;
  map_.erase(correlation);
  return Capture::Taken;
}

void PendingLaunches::erase(uint32_t correlation) {
  delete map_.get(correlation)->meta;
  map_.erase(correlation);
}

void PendingLaunches::forgetSlot(int slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<uint32_t> orphans;
  map_.forEach([&](uint32_t corr, PendingLaunch& p) {
    if (!(p.mask & (1u << slot))) return;  // launches this session did not take stay known
    p.mask &= ~(1u << slot);
    if (!p.mask) orphans.push_back(corr);
  });
  for (uint32_t corr : orphans) erase(corr);
}

size_t PendingLaunches::pruneMulti(uint64_t beforeNs, uint32_t ofSlots) {
  std::vector<uint32_t> stale;
  std::lock_guard<std::mutex> lock(mutex_);
  map_.forEach([&](uint32_t corr, PendingLaunch& p) {
    if (p.multi && p.launchNs < beforeNs && !(p.mask & ~ofSlots)) stale.push_back(corr);
  });
  for (uint32_t corr : stale) erase(corr);
  return stale.size();
}

bool PendingLaunches::forgetMulti(uint32_t correlation) {
  std::lock_guard<std::mutex> lock(mutex_);
  PendingLaunch* entry = map_.get(correlation);
  if (!entry || !entry->multi) return false;
  erase(correlation);
  return true;
}

size_t PendingLaunches::count(uint32_t slotMask) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  map_.forEach([&](uint32_t, PendingLaunch& p) { n += !p.multi && (p.mask & slotMask); });
  return n;
}

void GraphCaptures::remember(uint64_t graphNode, const CapturedContext& context) {
  std::lock_guard<std::mutex> lock(mutex_);
  captured_[graphNode] = context;
  any_.store(true, std::memory_order_release);
}

void GraphCaptures::clone(uint64_t graphNode, uint64_t original) {
  if (!any_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = captured_.find(original);
  if (it == captured_.end()) return;
  CapturedContext c = it->second;  // copy first: inserting may rehash
  captured_[graphNode] = c;
}

bool GraphCaptures::find(uint64_t graphNode, CapturedContext& out) {
  if (!any_.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = captured_.find(graphNode);
  if (it == captured_.end()) return false;
  out = it->second;
  return true;
}

size_t GraphCaptures::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return captured_.size();
}

}  // namespace ftp
