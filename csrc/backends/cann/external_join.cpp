#include "backends/cann/external_join.h"

#include <algorithm>
#include <chrono>

#include "core/clock.h"

namespace ftp {
namespace {

// The launch this thread has entered (depth counts nested enters; only the outermost pushes).
struct OpenLaunch {
  int depth = 0;
  bool fromHook = false;
  bool serialised = false;  // holds ExternalJoin::serial_
};
thread_local OpenLaunch openLaunch;

}  // namespace

uint32_t ExternalJoin::enter(bool fromHook) {
  if (!ready()) return 0;
  if (fromHook && openLaunch.depth > 0 && openLaunch.fromHook) {  // the last hook launch lost its exit
    openLaunch.depth = 1;
    exit(true);
  }
  if (openLaunch.depth++ > 0) return 0;
  openLaunch.fromHook = fromHook;
  openLaunch.serialised = serial_.try_lock_for(std::chrono::milliseconds(kSerialWaitMs));
  if (!openLaunch.serialised) unserialized_.fetch_add(1, std::memory_order_relaxed);
  const uint32_t id = nextId_.fetch_add(1, std::memory_order_relaxed) + 1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (windows_.size() < kMaxWindows) windows_.push_back({id, monotonicNs()});
  }
  push_(kExternalKind, id);
  return id;
}

void ExternalJoin::exit(bool fromHook) {
  if (openLaunch.depth == 0 || --openLaunch.depth > 0) return;
  uint64_t last = 0;
  pop_(kExternalKind, &last);
  if (openLaunch.serialised) serial_.unlock();
  openLaunch = OpenLaunch{};
  (void)fromHook;
}

void ExternalJoin::map(uint64_t externalId, uint64_t correlationId) {
  mappings_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  external_[uint32_t(correlationId)] = uint32_t(externalId);
  mapped_.insert(uint32_t(externalId));
}

bool ExternalJoin::translate(DeviceRecord& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = external_.find(r.correlation);
  if (it == external_.end()) return false;
  r.correlation = it->second;
  external_.erase(it);  // one device record per MSPTI correlation id
  joined_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void ExternalJoin::hold(const DeviceRecord& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  held_.push_back(r);
}

std::vector<DeviceRecord> ExternalJoin::resolveHeld(bool final, uint64_t beganNs) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<DeviceRecord> done, orphans;
  for (DeviceRecord& r : held_) {  // a mapping may have come in a later buffer than its record
    auto it = external_.find(r.correlation);
    if (it != external_.end()) {
      r.correlation = it->second;
      external_.erase(it);
      joined_.fetch_add(1, std::memory_order_relaxed);
      done.push_back(r);
    } else {
      orphans.push_back(r);
    }
  }
  held_.clear();
  std::vector<Window> open, later;  // launches before the drain without a mapping; launches since
  for (const Window& w : windows_) {
    if (w.enterNs >= beganNs) later.push_back(w);
    else if (!mapped_.count(w.id)) open.push_back(w);
  }
  std::sort(orphans.begin(), orphans.end(),
            [](const DeviceRecord& a, const DeviceRecord& b) { return a.startNs < b.startNs; });
  bool fits = !orphans.empty() && orphans.size() == open.size();  // windows_ is in id (host) order
  for (size_t i = 0; fits && i < orphans.size(); ++i) fits = orphans[i].startNs >= open[i].enterNs;
  for (size_t i = 0; i < orphans.size(); ++i) {
    orphans[i].correlation = fits ? open[i].id : 0;  // 0: no launch, the record stays unattributed
    (fits ? fallbackJoined_ : unmatched_).fetch_add(1, std::memory_order_relaxed);
    done.push_back(orphans[i]);
  }
  for (const Window& w : windows_)
    if (w.enterNs < beganNs) mapped_.erase(w.id);
  windows_.swap(later);
  if (final) {
    external_.clear();
    mapped_.clear();
    windows_.clear();
  }
  return done;
}

void ExternalJoin::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  held_.clear();
  external_.clear();
  mapped_.clear();
  windows_.clear();
}

}  // namespace ftp
