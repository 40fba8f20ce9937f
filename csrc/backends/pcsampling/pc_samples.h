// PC samples aggregated per (launch, cubin, function, pc offset), then turned into per-launch
// metrics and source-line children. No CUPTI calls here: the line lookup is passed in.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "session/profiler.h"

namespace ftp {

// CUPTI stall reason name -> metric name: "smsp__pcsamp_warps_issue_stalled_long_scoreboard"
// -> "stalled_long_scoreboard"; names without that prefix are lower-cased with non-alphanumerics
// turned into '_'.
std::string stallMetricName(const std::string& cuptiName);
// Reasons counted twice by CUPTI (the "_not_issued" subset of another reason) are not collected.
bool isSubsetReason(const std::string& cuptiName);
// What to configure: stall reasons, not the counters CUPTI lists beside them on sm90
// (smsp__pcsamp_sample_count, smsp__pcsamp_samples_data_dropped) and not the subsets.
bool isCollectedReason(const std::string& cuptiName);
// "selected" samples are warps that issued: counted in num_samples, not in num_stalled_samples.
bool isIssuedReason(const std::string& cuptiName);

struct PcKey {
  uint32_t correlation;  // 0 in continuous mode
  uint64_t cubinCrc;
  uint32_t function;  // interned function name
  uint64_t pcOffset;
  bool operator<(const PcKey& o) const {
    return std::tie(correlation, cubinCrc, function, pcOffset) <
           std::tie(o.correlation, o.cubinCrc, o.function, o.pcOffset);
  }
};

class PcSamples {
 public:
  // Reason index (per device, from CUPTI) -> interned metric name and whether it is a stall.
  void setReason(uint32_t index, uint32_t metric, bool stalled) { reasons_[index] = {metric, stalled}; }
  void add(const PcKey& key, uint32_t reasonIndex, uint64_t samples);
  uint64_t unknownReasonSamples() const { return unknownReason_; }
  bool empty() const { return samples_.empty(); }
  std::set<uint64_t> cubins() const;  // CRCs of the cubins samples were taken in

  // Builds one LaunchExtra per launch. Samples with correlation 0 (continuous mode) are shared
  // equally among `launchesOf(function)`; with no launch they count as unattributed.
  // `lineOf(crc, function, pc)` names the source line node.
  using LineOf = std::function<uint32_t(uint64_t, uint32_t, uint64_t)>;
  using LaunchesOf = std::function<const std::vector<uint32_t>*(uint32_t)>;
  std::map<uint32_t, LaunchExtra> build(const LineOf& lineOf, const LaunchesOf& launchesOf,
                                        double& unattributed) const;
  void clear() { samples_.clear(); }

 private:
  struct Reason {
    uint32_t metric;
    bool stalled;
  };
  std::unordered_map<uint32_t, Reason> reasons_;
  std::map<PcKey, std::map<uint32_t, uint64_t>> samples_;  // key -> reason index -> samples
  uint64_t unknownReason_ = 0;
};

}  // namespace ftp
