#include "backends/pcsampling/pc_samples.h"

#include <cctype>

#include "core/strings.h"

namespace ftp {
namespace {

const char kCuptiPrefix[] = "smsp__pcsamp_warps_issue_stalled_";

// Adds value * share of every metric to `metrics` (a short list: linear search is fine).
void addMetric(std::vector<std::pair<uint32_t, double>>& metrics, uint32_t name, double value) {
  for (auto& m : metrics)
    if (m.first == name) {
      m.second += value;
      return;
    }
  metrics.emplace_back(name, value);
}

LaunchExtra::Child& childFor(LaunchExtra& extra, uint32_t line) {
  for (auto& c : extra.children)
    if (c.path.size() == 1 && c.path[0].second == line) return c;
  extra.children.push_back({{{NodeKind::Line, line}}, {}});
  return extra.children.back();
}

}  // namespace

std::string stallMetricName(const std::string& cuptiName) {
  std::string reason = cuptiName;
  if (reason.rfind(kCuptiPrefix, 0) == 0) reason = reason.substr(sizeof(kCuptiPrefix) - 1);
  for (char& c : reason) c = std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '_';
  return "stalled_" + reason;
}

bool isSubsetReason(const std::string& cuptiName) {
  const std::string suffix = "_not_issued";
  return cuptiName.size() > suffix.size() &&
         cuptiName.compare(cuptiName.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isCollectedReason(const std::string& cuptiName) {
  if (isSubsetReason(cuptiName)) return false;
  const bool cuptiCounter = cuptiName.rfind("smsp__pcsamp_", 0) == 0;
  return !cuptiCounter || cuptiName.rfind(kCuptiPrefix, 0) == 0;
}

bool isIssuedReason(const std::string& cuptiName) { return stallMetricName(cuptiName) == "stalled_selected"; }

void PcSamples::add(const PcKey& key, uint32_t reasonIndex, uint64_t samples) {
  if (!samples) return;
  if (!reasons_.count(reasonIndex)) {
    unknownReason_ += samples;
    return;
  }
  samples_[key][reasonIndex] += samples;
}

std::map<uint32_t, LaunchExtra> PcSamples::build(const LineOf& lineOf, const LaunchesOf& launchesOf,
                                                 double& unattributed) const {
  static const uint32_t numSamples = intern("num_samples");
  static const uint32_t numStalled = intern("num_stalled_samples");
  std::map<uint32_t, LaunchExtra> extras;
  std::vector<uint32_t> single(1);
  for (const auto& [key, perReason] : samples_) {
    const std::vector<uint32_t>* launches = &single;
    single[0] = key.correlation;
    if (key.correlation == 0) launches = launchesOf(key.function);
    uint64_t total = 0;
    for (const auto& r : perReason) total += r.second;
    if (!launches || launches->empty()) {
      unattributed += double(total);
      continue;
    }
    const double share = 1.0 / double(launches->size());
    const uint32_t line = lineOf(key.cubinCrc, key.function, key.pcOffset);
    for (uint32_t correlation : *launches) {
      LaunchExtra& extra = extras[correlation];
      LaunchExtra::Child& child = childFor(extra, line);
      for (const auto& [index, samples] : perReason) {
        const Reason& reason = reasons_.at(index);
        const double value = double(samples) * share;
        // Only the line nodes carry samples: the kernel's figures are their sum (metrics in the
        // tree are exclusive and readers add children up, as for time under scopes).
        addMetric(child.metrics, numSamples, value);
        if (reason.stalled) addMetric(child.metrics, numStalled, value);
        addMetric(child.metrics, reason.metric, value);
      }
    }
  }
  return extras;
}

std::set<uint64_t> PcSamples::cubins() const {
  std::set<uint64_t> crcs;
  for (const auto& entry : samples_) crcs.insert(entry.first.cubinCrc);
  return crcs;
}

}  // namespace ftp
