// One Profiler Host object: the metric catalogue of a chip, validation of metric names, the
// config image (and pass count) of a metric set, and evaluation of decoded ranges.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backends/counters/counters_api.h"

namespace ftp {

struct MetricInfo {
  std::string name;
  std::string type;  // counter | ratio | throughput
  std::string description;
  std::string unit;
  std::vector<std::string> submetrics;
};

// The chip name (e.g. "GH100") of CUDA device `deviceIndex`.
std::string chipOfDevice(const CountersApi& api, size_t deviceIndex);

// "counter" | "ratio" | "throughput".
const char* metricTypeName(CUpti_MetricType type);

class MetricHost {
 public:
  // `availability`: the counter availability image of a context (may be empty for listing).
  MetricHost(const CountersApi& api, std::string chip, std::vector<uint8_t> availability);
  ~MetricHost();
  MetricHost(const MetricHost&) = delete;
  MetricHost& operator=(const MetricHost&) = delete;

  const std::string& chip() const { return chip_; }
  std::vector<MetricInfo> list(bool withSubmetrics);
  // Throws std::invalid_argument naming the first metric the chip does not know.
  void validate(const std::vector<std::string>& metrics);
  CUpti_MetricType typeOf(const std::string& metric);
  // Adds `metrics` to this host object and returns the config image; `passes` set.
  std::vector<uint8_t> configure(const std::vector<std::string>& metrics, size_t& passes);
  std::vector<double> evaluate(const std::vector<uint8_t>& counterData, size_t range,
                               const std::vector<const char*>& metrics);

 private:
  const CountersApi& api_;
  std::string chip_;
  std::vector<uint8_t> availability_;
  CUpti_Profiler_Host_Object* object_ = nullptr;
};

}  // namespace ftp
