#include "backends/cann/external_join.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "core/clock.h"

namespace ftp {
namespace {

// The launch this thread has entered (depth counts nested enters; only the outermost pushes).
struct OpenLaunch {
  int depth = 0;
  bool fromHook = false;
  bool serialised = false;  // holds ExternalJoin::serial_
  uint32_t id = 0;
};
thread_local OpenLaunch openLaunch;

bool isCopy(const DeviceRecord& r) { return r.kind == RecordKind::Memcpy || r.kind == RecordKind::Memset; }

}  // namespace

uint32_t ExternalJoin::enter(bool fromHook, bool copy) {
  if (!ready()) return 0;
  if (fromHook && openLaunch.depth > 0 && openLaunch.fromHook) {  // the last hook launch lost its exit
    openLaunch.depth = 1;
    exit(true);
  }
  if (openLaunch.depth++ > 0) return 0;
  openLaunch.fromHook = fromHook;
  if (const uint32_t holder = fromHook ? 0 : openWindow_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(mutex_);  // MSPTI may have mapped this launch to it already
    contested_.insert(holder);
  }
  openLaunch.serialised = serial_.try_lock_for(std::chrono::milliseconds(kSerialWaitMs));
  if (!openLaunch.serialised) unserialized_.fetch_add(1, std::memory_order_relaxed);
  const uint32_t id = nextId_.fetch_add(1, std::memory_order_relaxed) + 1;
  openLaunch.id = id;
  if (openLaunch.serialised) openWindow_.store(id, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (windows_.size() < kMaxWindows) windows_.push_back({id, monotonicNs(), 0, copy});
  }
  push_(kExternalKind, id);
  return id;
}

void ExternalJoin::exit(bool fromHook) {
  if (openLaunch.depth == 0 || --openLaunch.depth > 0) return;
  uint64_t last = 0;
  pop_(kExternalKind, &last);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto w = windows_.rbegin(); w != windows_.rend(); ++w)  // its own window is near the end
      if (w->id == openLaunch.id) {
        w->exitNs = monotonicNs();
        break;
      }
  }
  if (openLaunch.serialised) {
    openWindow_.store(0, std::memory_order_relaxed);
    serial_.unlock();
  }
  openLaunch = OpenLaunch{};
  (void)fromHook;
}

uint32_t ExternalJoin::enterQueued(std::string_view kernelName, uint64_t stream) {
  if (!ready()) return 0;
  const uint32_t id = nextId_.fetch_add(1, std::memory_order_relaxed) + 1;
  std::lock_guard<std::mutex> lock(mutex_);
  if (queued_.add(id, kernelName, stream, monotonicNs())) queuedLaunches_.fetch_add(1, std::memory_order_relaxed);
  return id;
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
  if (isCopy(r)) {  // a copy's mapping is made before its window opens: it names another launch
    external_.erase(it);
    return false;
  }
  if (contested_.count(it->second)) return false;  // held: a later mapping may name its own window
  r.correlation = it->second;
  external_.erase(it);  // one device record per MSPTI correlation id
  counted(r, kByExternalId);
  return true;
}

void ExternalJoin::hold(const DeviceRecord& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  held_.push_back(r);
}

std::vector<DeviceRecord> ExternalJoin::resolveHeld(bool final, uint64_t beganNs) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<DeviceRecord> done, kernels, copies;
  for (DeviceRecord& r : held_) {  // a mapping may have come in a later buffer than its record
    auto it = isCopy(r) ? external_.end() : external_.find(r.correlation);
    if (it != external_.end()) {
      r.correlation = it->second;
      external_.erase(it);
      counted(r, kByExternalId);
      done.push_back(r);
    } else {
      (isCopy(r) ? copies : kernels).push_back(r);
    }
  }
  held_.clear();
  queued_.join(kernels, done, [this](const DeviceRecord& r, bool joined) { counted(r, joined ? kByQueueOrder : kUnjoined); });
  joinByLaunchOrder(kernels, beganNs, done);
  joinCopies(copies, beganNs, done);
  std::vector<Window> later;  // launches since the drain began may still get their records
  for (const Window& w : windows_) {
    if (w.enterNs >= beganNs) later.push_back(w);
    else mapped_.erase(w.id), contested_.erase(w.id);
  }
  windows_.swap(later);
  if (final) {
    external_.clear();
    mapped_.clear();
    windows_.clear();
    contested_.clear();
    queued_.clear();
  }
  return done;
}

void ExternalJoin::joinByLaunchOrder(std::vector<DeviceRecord>& orphans, uint64_t beganNs,
                                     std::vector<DeviceRecord>& done) {
  std::vector<Window> open;  // kernel launches before the drain without a mapping, in id (host) order
  for (const Window& w : windows_)
    if (w.enterNs < beganNs && !w.copy && !mapped_.count(w.id)) open.push_back(w);
  std::sort(orphans.begin(), orphans.end(),
            [](const DeviceRecord& a, const DeviceRecord& b) { return a.startNs < b.startNs; });
  bool fits = !orphans.empty() && orphans.size() == open.size();
  for (size_t i = 0; fits && i < orphans.size(); ++i) fits = orphans[i].startNs >= open[i].enterNs;
  for (size_t i = 0; i < orphans.size(); ++i) {
    orphans[i].correlation = fits ? open[i].id : 0;  // 0: no launch, the record stays unattributed
    counted(orphans[i], fits ? kByLaunchOrder : kUnjoined);
    done.push_back(orphans[i]);
  }
}

void ExternalJoin::joinCopies(std::vector<DeviceRecord>& copies, uint64_t beganNs, std::vector<DeviceRecord>& done) {
  std::vector<const Window*> windows;  // closed copy windows made before the drain, by enter time
  for (const Window& w : windows_)
    if (w.copy && w.exitNs && w.enterNs < beganNs) windows.push_back(&w);
  std::sort(windows.begin(), windows.end(), [](const Window* a, const Window* b) { return a->enterNs < b->enterNs; });
  // Per record: the windows inside its span (found by enter time), and per window how many
  // records' spans hold it. A record joins when it holds one window that no other record holds.
  std::vector<size_t> only(copies.size(), SIZE_MAX), fits(copies.size(), 0), owners(windows.size(), 0);
  for (size_t r = 0; r < copies.size(); ++r) {
    auto it = std::lower_bound(windows.begin(), windows.end(), copies[r].startNs,
                               [](const Window* w, uint64_t t) { return w->enterNs < t; });
    for (; it != windows.end() && (*it)->enterNs <= copies[r].endNs; ++it) {
      if ((*it)->exitNs > copies[r].endNs) continue;
      const size_t index = size_t(it - windows.begin());
      ++owners[index], ++fits[r], only[r] = index;
    }
  }
  for (size_t r = 0; r < copies.size(); ++r) {
    const bool joined = fits[r] == 1 && owners[only[r]] == 1;
    copies[r].correlation = joined ? windows[only[r]]->id : 0;
    counted(copies[r], joined ? kByHostSpan : kUnjoined);
    done.push_back(copies[r]);
  }
}

void ExternalJoin::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  held_.clear();
  external_.clear();
  mapped_.clear();
  contested_.clear();
  windows_.clear();
  queued_.clear();
}

}  // namespace ftp
