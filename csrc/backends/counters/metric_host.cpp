#include "backends/counters/metric_host.h"

#include <stdexcept>

namespace ftp {

std::string chipOfDevice(const CountersApi& api, size_t deviceIndex) {
  auto p = FTP_PARAMS(CUpti_Device_GetChipName_Params);
  p.deviceIndex = deviceIndex;
  api.check(api.deviceGetChipName(&p), "cuptiDeviceGetChipName");
  return p.pChipName ? p.pChipName : "";
}

const char* metricTypeName(CUpti_MetricType type) {
  switch (type) {
    case CUPTI_METRIC_TYPE_COUNTER: return "counter";
    case CUPTI_METRIC_TYPE_RATIO: return "ratio";
    case CUPTI_METRIC_TYPE_THROUGHPUT: return "throughput";
    default: return "unknown";
  }
}

MetricHost::MetricHost(const CountersApi& api, std::string chip, std::vector<uint8_t> availability)
    : api_(api), chip_(std::move(chip)), availability_(std::move(availability)) {
  auto p = FTP_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  p.pChipName = chip_.c_str();
  p.pCounterAvailabilityImage = availability_.empty() ? nullptr : availability_.data();
  api_.check(api_.hostInitialize(&p), ("cuptiProfilerHostInitialize for chip " + chip_).c_str());
  object_ = p.pHostObject;
}

MetricHost::~MetricHost() {
  auto p = FTP_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
  p.pHostObject = object_;
  api_.hostDeinitialize(&p);
}

std::vector<MetricInfo> MetricHost::list(bool withSubmetrics) {
  std::vector<MetricInfo> out;
  for (auto type : {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
    auto p = FTP_PARAMS(CUpti_Profiler_Host_GetBaseMetrics_Params);
    p.pHostObject = object_;
    p.metricType = type;
    api_.check(api_.hostGetBaseMetrics(&p), "cuptiProfilerHostGetBaseMetrics");
    for (size_t i = 0; i < p.numMetrics; ++i) {
      MetricInfo info;
      info.name = p.ppMetricNames[i];
      info.type = metricTypeName(type);
      auto props = FTP_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params);
      props.pHostObject = object_;
      props.pMetricName = p.ppMetricNames[i];
      if (api_.hostGetMetricProperties(&props) == CUPTI_SUCCESS) {
        if (props.pDescription) info.description = props.pDescription;
        if (props.pDimUnit) info.unit = props.pDimUnit;
      }
      if (withSubmetrics) {
        auto sub = FTP_PARAMS(CUpti_Profiler_Host_GetSubMetrics_Params);
        sub.pHostObject = object_;
        sub.metricType = type;
        sub.pMetricName = p.ppMetricNames[i];
        if (api_.hostGetSubMetrics(&sub) == CUPTI_SUCCESS)
          for (size_t j = 0; j < sub.numOfSubmetrics; ++j) info.submetrics.emplace_back(sub.ppSubMetrics[j]);
      }
      out.push_back(std::move(info));
    }
  }
  return out;
}

CUpti_MetricType MetricHost::typeOf(const std::string& metric) {
  auto p = FTP_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params);
  p.pHostObject = object_;
  p.pMetricName = metric.c_str();
  if (api_.hostGetMetricProperties(&p) != CUPTI_SUCCESS)
    throw std::invalid_argument("unknown hardware metric '" + metric + "' for chip " + chip_ +
                                "; list the valid names with flagtree.profiler.list_metrics() or "
                                "`flagtree-profiler --list-metrics`");
  return p.metricType;
}

void MetricHost::validate(const std::vector<std::string>& metrics) {
  for (const auto& m : metrics) typeOf(m);
}

std::vector<uint8_t> MetricHost::configure(const std::vector<std::string>& metrics, size_t& passes) {
  std::vector<const char*> names;
  for (const auto& m : metrics) names.push_back(m.c_str());
  auto add = FTP_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  add.pHostObject = object_;
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  api_.check(api_.hostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
  auto size = FTP_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = object_;
  api_.check(api_.hostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
  std::vector<uint8_t> image(size.configImageSize);
  auto get = FTP_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  get.pHostObject = object_;
  get.configImageSize = image.size();
  get.pConfigImage = image.data();
  api_.check(api_.hostGetConfigImage(&get), "cuptiProfilerHostGetConfigImage");
  auto count = FTP_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  count.configImageSize = image.size();
  count.pConfigImage = image.data();
  api_.check(api_.hostGetNumOfPasses(&count), "cuptiProfilerHostGetNumOfPasses");
  passes = count.numOfPasses;
  return image;
}

std::vector<double> MetricHost::evaluate(const std::vector<uint8_t>& counterData, size_t range,
                                         const std::vector<const char*>& metrics) {
  std::vector<double> values(metrics.size(), 0.0);
  auto p = FTP_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  p.pHostObject = object_;
  p.pCounterDataImage = counterData.data();
  p.counterDataImageSize = counterData.size();
  p.rangeIndex = range;
  p.ppMetricNames = const_cast<const char**>(metrics.data());
  p.numMetrics = metrics.size();
  p.pMetricValues = values.data();
  api_.check(api_.hostEvaluateToGpuValues(&p), "cuptiProfilerHostEvaluateToGpuValues");
  return values;
}

}  // namespace ftp
