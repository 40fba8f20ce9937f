// One profiling session: its context source (shadow or python), its data store (tree or
// trace) and its counters. Sessions live in the Profiler's slots.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "data/records.h"
#include "data/trace.h"
#include "data/tree.h"

namespace ftp {

enum class ContextKind : uint8_t { Shadow = 0, Python = 1 };
enum class DataKind : uint8_t { Tree = 0, Trace = 1 };

class Session {
 public:
  Session(uint32_t uid, int slot, ContextKind context, DataKind data)
      : uid(uid), slot(slot), context(context), data(data) {}

  // Adds a finished record launched under `contextNode` (and `state`, 0 = none).
  void addRecord(uint32_t contextNode, uint32_t state, const DeviceRecord& record,
                 const LaunchMetadata* meta, uint64_t launchNs, uint32_t tid);

  // The context of a record replayed from a graph: below the graph launch's node `launchNode`,
  // a scope "<captured_at>" and under it a copy of the capture-time path of `capturedNode`;
  // with kUnknownCapture (captured before this session, or while it was inactive), a scope
  // "<captured_at:unknown>". Takes the tree lock.
  static constexpr uint32_t kUnknownCapture = 0xFFFFFFFFu;
  uint32_t graftCaptured(uint32_t launchNode, uint32_t capturedNode);

  // Extras (see LaunchExtra): joined to the launch's kernel node whether its record arrived
  // before or after. Kernel nodes are remembered per correlation only once extras are enabled,
  // so plain sessions pay nothing for this.
  void enableExtras();
  void attachExtra(uint32_t correlation, LaunchExtra&& extra);
  // Metrics written as the mean over their attachments instead of the sum (ratios).
  void setMeanMetrics(const std::vector<uint32_t>& names);
  // The value to write for a user metric of a node (sum, or mean for mean metrics). Tree lock.
  double metricValue(uint32_t node, uint32_t metric, double sum) const;
  // Trace mode: the metrics attached to launch `correlation` (empty when none).
  std::vector<std::pair<uint32_t, double>> traceExtras(uint32_t correlation);
  // At finalize: extras whose launch never arrived go under ROOT/"<unmatched launch>" (tree) or
  // are dropped (trace); returns how many launches that was.
  uint64_t settleExtras();

  const uint32_t uid;
  const int slot;
  const ContextKind context;
  const DataKind data;
  Tree tree;         // both modes: the trace names each event's context by a tree path
  TraceStore trace;  // data="trace" only
  std::atomic<uint64_t> records{0};
  std::atomic<uint64_t> unattributed{0};  // records whose launch was not seen (attributed to ROOT)

 private:
  void applyExtra(uint32_t node, const LaunchExtra& extra);  // tree lock
  // Adds to one node, counting attachments of mean metrics. Tree lock.
  void addMetrics(uint32_t node, const std::vector<std::pair<uint32_t, double>>& metrics);

  std::unordered_map<uint64_t, uint32_t> grafts_;  // (launch node, captured node) -> node; tree lock
  std::atomic<bool> extrasEnabled_{false};
  // Tree mode, under the tree lock:
  std::unordered_map<uint32_t, uint32_t> kernelNodeOf_;              // correlation -> kernel node
  std::unordered_map<uint32_t, std::vector<LaunchExtra>> earlyExtras_;  // extras before their record
  std::unordered_set<uint32_t> meanMetrics_;
  std::unordered_map<uint64_t, uint32_t> meanAttachments_;  // (node << 32 | metric) -> attachments
  // Trace mode, under extrasMutex_: correlation -> (metrics summed, attachments).
  std::mutex extrasMutex_;
  std::unordered_map<uint32_t, std::pair<std::vector<std::pair<uint32_t, double>>, uint32_t>> traceExtras_;
};

}  // namespace ftp
