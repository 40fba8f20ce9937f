// One profiling session: its context source (shadow or python), its data store (a tree or a
// trace store, behind DataStore) and its counters. Sessions live in the Profiler's slots.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "context/context_source.h"
#include "core/clock.h"
#include "data/records.h"
#include "store/store.h"

namespace ftp {

// Where a session's kernel times come from. A session takes only the launches and records of its
// own source: with a CUPTI session and a device_timer session open at once, each launch is seen
// by both routes, and each session must count it once.
enum class TimeSource : uint8_t { Tracer = 0, DeviceTimer = 1 };
constexpr int kTimeSources = 2;

class Session {
 public:
  Session(uint32_t uid, int slot, ContextKind context, DataKind data)
      : uid(uid), slot(slot), context(context), store_(makeStore(data)) {}

  DataStore& store() { return *store_; }
  // Scope, frame and state paths of this session (locked by contexts().mutex()).
  Tree& contexts() { return store_->contexts(); }
  // The same tree as the context layer resolves into (context/context_source.h).
  ContextTree contextTree() { return ContextTree{slot, uid, contexts()}; }

  // Adds a finished record launched under `contextNode` (and `state`, 0 = none).
  void addRecord(uint32_t contextNode, uint32_t state, const DeviceRecord& record,
                 const LaunchMetadata* meta, uint64_t launchNs, uint32_t tid);

  // The context of a record replayed from a graph: below the graph launch's node `launchNode`,
  // a scope "<captured_at>" and under it a copy of the capture-time path of `capturedNode`;
  // with kUnknownCapture (captured before this session, or while it was inactive), a scope
  // "<captured_at:unknown>". Takes the store lock.
  static constexpr uint32_t kUnknownCapture = 0xFFFFFFFFu;
  uint32_t graftCaptured(uint32_t launchNode, uint32_t capturedNode);

  // Extras (see LaunchExtra and DataStore): joined to the launch's record by the store.
  void enableExtras(bool afterRecords) { store_->enableExtras(afterRecords); }
  bool extrasEnabled() const { return store_->extrasEnabled(); }
  size_t nodesKeptForExtras() { return store_->nodesKeptForExtras(); }
  void attachExtra(uint32_t correlation, LaunchExtra&& extra) { store_->attachExtra(correlation, std::move(extra)); }
  void setMeanMetrics(const std::vector<uint32_t>& names) { store_->setMeanMetrics(names); }
  uint64_t settleExtras() { return store_->settleExtras(); }
  uint64_t extrasAfterPart() { return store_->extrasAfterPart(); }
  DataStore::Conflicts metricConflicts() { return store_->metricConflicts(); }

  const uint32_t uid;
  const int slot;
  const ContextKind context;
  const uint64_t createdNs = monotonicNs();  // host monotonic

 private:
  std::unique_ptr<DataStore> store_;

 public:
  // Counted by the thread that delivers the records, on a cache line apart from what every
  // launch reads above (slot, uid, context source, store): sharing one, that line went back and
  // forth between the launching thread's core and the delivering thread's.
  alignas(64) std::atomic<uint64_t> records{0};
  std::atomic<uint64_t> unattributed{0};  // records whose launch was not seen (attributed to ROOT)
  std::atomic<uint64_t> placedAtLaunch{0};  // records off the tracer's clock, placed at their launch
  // The most a tracer's record started before its launch call (host clock), over the session's
  // records; kNoLead: none seen. A kernel cannot start before the call that launches it, so a
  // positive value is the tracer's clock disagreeing with the host's by at least that much.
  static constexpr int64_t kNoLead = INT64_MIN;
  std::atomic<int64_t> maxLaunchLeadNs{kNoLead};
  void noteLaunchLead(int64_t leadNs) {
    int64_t seen = maxLaunchLeadNs.load(std::memory_order_relaxed);
    while (leadNs > seen && !maxLaunchLeadNs.compare_exchange_weak(seen, leadNs, std::memory_order_relaxed)) {
    }
  }

 private:
  std::unordered_map<uint64_t, uint32_t> grafts_;  // (launch node, captured node) -> node; store lock
};

}  // namespace ftp
