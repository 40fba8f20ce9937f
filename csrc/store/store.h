// The data store of one session, behind one interface: a TreeStore (data="tree") sums records
// into the calling-context tree, a TraceStore (data="trace") keeps one event per record. Both
// keep a context tree (scope, frame and state paths): the tree store's is the profile itself,
// the trace store's names each event's context. Everything that depends on the kind of data
// lives in the two stores; a session only holds a DataStore.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "data/records.h"
#include "data/trace.h"
#include "data/tree.h"
#include "dump/output.h"

namespace ftp {

// Trace and Perfetto keep the same events (a TraceStore) and differ in their writer.
enum class DataKind : uint8_t { Tree = 0, Trace = 1, Perfetto = 2 };

using Metrics = std::vector<std::pair<uint32_t, double>>;  // (interned metric name, value)

// The metrics of one scope entry or exit: numbers summed into the node, and properties set on it.
struct ScopeMetrics {
  Metrics sums;
  std::vector<Property> properties;
  bool empty() const { return sums.empty() && properties.empty(); }
};

class DataStore {
 public:
  virtual ~DataStore() = default;

  // Scope, frame and state paths; its mutex guards the whole store (one lock per record).
  Tree& contexts() { return tree_; }
  std::mutex& mutex() { return tree_.mutex(); }

  // A finished record launched under context node `context` (and state `state`, 0 = none).
  virtual void addRecord(uint32_t context, uint32_t state, const DeviceRecord& record,
                         const LaunchMetadata* meta, uint64_t launchNs, uint32_t tid) = 0;
  // Metrics given when a shadow scope was entered (or left), for its node.
  virtual void addScopeMetrics(uint32_t node, const ScopeMetrics& metrics) = 0;
  // Scope metrics that met a value of the same name on their node which they cannot join (a sum
  // and a property, a text and a number): the last one given stood. How many, and the first
  // one's name (interned).
  struct Conflicts {
    uint64_t count = 0;
    uint32_t firstName = 0;
  };
  virtual Conflicts metricConflicts() { return {}; }
  // A closed scope; `node` is its context node when resolved (cpu-timed shadow scopes), else
  // kNoNode.
  static constexpr uint32_t kNoNode = 0xFFFFFFFFu;
  virtual void closeScope(const ScopeEvent& scope, uint32_t node) = 0;

  // Extras (see LaunchExtra): joined to the launch's record whether it arrived before or after.
  // Plain sessions pay nothing for this. Extras that come before their record wait for it
  // (a look-up per record); for extras that may come after it (afterRecords: CUPTI's records,
  // samples and imports joined later) every kernel's node is remembered by correlation until its
  // part is taken, which grows with the launches of a part (of the run when it writes none), so
  // only a producer that needs it asks for it.
  void enableExtras(bool afterRecords) {
    if (afterRecords) nodesByCorrelation_.store(true, std::memory_order_release);
    extrasEnabled_.store(true, std::memory_order_release);
  }
  bool extrasEnabled() const { return extrasEnabled_.load(std::memory_order_acquire); }
  // How many kernels' nodes the store remembers by correlation (for extras after their record).
  virtual size_t nodesKeptForExtras() { return 0; }
  virtual void attachExtra(uint32_t correlation, LaunchExtra&& extra) = 0;
  // Metrics written as the mean over their attachments instead of the sum (ratios).
  void setMeanMetrics(const std::vector<uint32_t>& names);
  // At finalize: extras whose launch never arrived are kept apart (tree) or dropped (trace);
  // returns how many launches that was. Extras of a part already taken are dropped and counted
  // in extrasAfterPart() instead.
  virtual uint64_t settleExtras() = 0;
  // Launches whose extras were dropped because the part their record belongs to had been taken
  // (see takenAlready()): a part once taken is written as it was.
  uint64_t extrasAfterPart();

  // Vendor imports (session/launch_log.h). The node a launch's record landed on: its kernel node
  // (tree) or its context node (trace). Caller holds mutex().
  virtual uint32_t recordNode(uint32_t context, uint32_t state, RecordKind kind, uint32_t name) = 0;
  // A vendor row no launch explains, kept with its metrics at `node` (tree; a trace shows
  // launches only, so it keeps none). Caller holds mutex().
  virtual void holdRow(uint32_t node, const Metrics& metrics) = 0;

  // Writes the store through the writer of its file kind (atomically); returns the number of
  // nodes or device events written. Throws std::runtime_error on failure, keeping the data.
  virtual uint64_t write(const OutputRequest& request) = 0;
  // A part taken out: a store of the same kind holding what was collected since the previous
  // part, which this one forgets as a written part would (tree: metrics zeroed, nodes kept;
  // trace: events emptied). Taken under the lock in time proportional to the tree's nodes (the
  // trace's events are swapped, not copied; while it holds extras, one look-up per event); the
  // taker writes it later, on any thread, with request.part set, while this store goes on
  // collecting. The taken launches are forgotten: their extras still to come are dropped (see
  // takenAlready()).
  virtual std::unique_ptr<DataStore> takePart() = 0;
  // Frees the data once written (the session is closed).
  virtual void release() = 0;

 protected:
  bool nodesByCorrelation() const { return nodesByCorrelation_.load(std::memory_order_acquire); }
  bool isMean(uint32_t metric) const { return !meanMetrics_.empty() && meanMetrics_.count(metric); }

  // Which extras belong to a part already taken, told apart by correlation id (under mutex()).
  // Only where extras may come after their record (afterRecords): there the ids are the vendor
  // tracer's, one per-process counter taken at each launch call, so they grow in launch order
  // (a uint32, which wraps only after 4 billion launches). Elsewhere each extra comes before its
  // record, so none can be late, and ids come from several ranges, one reused per graph node,
  // which no boundary orders. A part is taken after the tracer's flush, so each id up to the highest
  // recorded then had its record delivered; only concurrent launches' records, kept in separate
  // buffers, may still come out of order. The defensive reading: every id at or below that
  // highest one belongs to a taken part. An extra for such an id that no record of the current
  // part claims by the next part's end (or finalize) is dropped and counted, never added to a
  // later part; an out-of-order record's extra may be lost that way, but counted.
  void noteRecorded(uint32_t correlation) {
    if (nodesByCorrelation() && correlation >= recordedBelow_) recordedBelow_ = uint64_t(correlation) + 1;
  }
  bool takenAlready(uint32_t correlation) const { return correlation < takenBelow_; }
  // At a part's take: every id recorded so far belongs to a taken part, and the extras in
  // `waiting` for one of them are dropped (dropTaken).
  template <typename Map>
  void partTaken(Map& waiting) {
    takenBelow_ = recordedBelow_;
    dropTaken(waiting);
  }
  // Drops the entries of `waiting` (extras by correlation, their record not seen in the current
  // part) that belong to a taken part, counting their launches.
  template <typename Map>
  void dropTaken(Map& waiting) {
    if (!takenBelow_) return;
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (!takenAlready(it->first)) {
        ++it;
        continue;
      }
      it = waiting.erase(it);
      ++extrasAfterPart_;
    }
  }

  Tree tree_;
  std::unordered_set<uint32_t> meanMetrics_;  // under mutex()

 private:
  std::atomic<bool> extrasEnabled_{false};
  std::atomic<bool> nodesByCorrelation_{false};
  // Under mutex(): one past the highest correlation recorded (afterRecords), and what it was when
  // the last part was taken (0: none taken); launches whose extras came after their part.
  uint64_t recordedBelow_ = 0;
  uint64_t takenBelow_ = 0;
  uint64_t extrasAfterPart_ = 0;
};

std::unique_ptr<DataStore> makeStore(DataKind kind);

}  // namespace ftp
