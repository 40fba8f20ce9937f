// The store of a data="tree" session: every record summed into its context's kernel node of
// the calling-context tree, written as Hatchet JSON.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "store/store.h"

namespace ftp {

class TreeStore final : public DataStore {
 public:
  void addRecord(uint32_t context, uint32_t state, const DeviceRecord& record, const LaunchMetadata* meta,
                 uint64_t launchNs, uint32_t tid) override;
  void addScopeMetrics(uint32_t node, const ScopeMetrics& metrics) override;
  Conflicts metricConflicts() override;
  void closeScope(const ScopeEvent& scope, uint32_t node) override;
  void attachExtra(uint32_t correlation, LaunchExtra&& extra) override;
  size_t nodesKeptForExtras() override;
  uint64_t settleExtras() override;
  uint64_t write(const OutputRequest& request) override;
  std::unique_ptr<DataStore> takePart() override;
  void release() override;
  uint32_t recordNode(uint32_t context, uint32_t state, RecordKind kind, uint32_t name) override;
  void holdRow(uint32_t node, const Metrics& metrics) override;

 private:
  void applyExtra(uint32_t node, const LaunchExtra& extra);
  // Adds to one node, counting attachments of mean metrics.
  void addMetrics(uint32_t node, const Metrics& metrics);
  // The value to write for a user metric of a node: the sum, or the mean for mean metrics.
  double metricValue(uint32_t node, uint32_t metric, double sum) const;

  void noteConflict(uint32_t name);

  // Under mutex():
  Conflicts conflicts_;
  std::unordered_map<uint32_t, uint32_t> kernelNodeOf_;                 // correlation -> kernel node, this part's
  std::unordered_map<uint32_t, std::vector<LaunchExtra>> earlyExtras_;  // extras without their record (yet)
  std::unordered_map<uint64_t, uint32_t> meanAttachments_;              // (node << 32 | metric) -> count
};

}  // namespace ftp
