#include "backends/counters/counter_collector.h"

#include <cstring>
#include <stdexcept>

#include "backends/nvidia/cuda_driver.h"
#include "backends/nvidia/cupti_tracer.h"
#include "core/errors.h"
#include "core/strings.h"
#include "session/profiler.h"

namespace ftp {

namespace {

constexpr size_t kMaxErrors = 8;

bool endsWith(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

const double* find(const std::vector<std::pair<std::string, double>>& m, const char* name) {
  for (const auto& kv : m)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

// Auto ranges are named after the kernel in some CUPTI versions and numbered in others: a name
// that is neither a number nor related to the queued kernel's name means the order slipped.
bool rangeMatchesKernel(const char* range, const std::string& kernel) {
  if (!range || !*range || kernel.empty()) return true;
  bool numeric = true;
  for (const char* c = range; *c; ++c) numeric = numeric && (*c >= '0' && *c <= '9');
  if (numeric) return true;
  return kernel.find(range) != std::string::npos || std::string(range).find(kernel) != std::string::npos;
}

}  // namespace

bool isAdditiveMetric(const std::string& metric, CUpti_MetricType type) {
  if (endsWith(metric, ".sum")) return true;
  return type == CUPTI_METRIC_TYPE_COUNTER && metric.find('.') == std::string::npos;
}

std::vector<std::pair<std::string, double>> derivedMetrics(
    const std::vector<std::pair<std::string, double>>& measured, double peakGBps) {
  std::vector<std::pair<std::string, double>> out;
  if (const double* warps = find(measured, "sm__warps_active.avg.pct_of_peak_sustained_active"))
    out.emplace_back("achieved_occupancy (%)", *warps);
  const double* read = find(measured, "dram__bytes_read.sum");
  const double* write = find(measured, "dram__bytes_write.sum");
  const double* duration = find(measured, "gpu__time_duration.sum");  // ns
  if (read && write && duration && *duration > 0) {
    double gbps = (*read + *write) / *duration;  // bytes per ns = GB/s
    out.emplace_back("dram_bandwidth (GB/s)", gbps);
    if (peakGBps > 0) out.emplace_back("dram_bandwidth_util (%)", 100.0 * gbps / peakGBps);
  }
  return out;
}

CounterCollector& CounterCollector::instance() { return leaked<CounterCollector>(); }

uintptr_t currentContext() { return reinterpret_cast<uintptr_t>(CudaDriver::instance().currentContext()); }

// 0 without a driver (stand-in tests).
int deviceOfCurrentContext() { return CudaDriver::instance().currentDevice(); }

void CounterCollector::addSession(const CountersApi& api, int slot, const std::vector<std::string>& metrics,
                                  size_t maxRanges, std::vector<double> peakGBps, CUcontext context,
                                  int deviceOfContext) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (slots_ && metrics != metrics_)
    throw std::invalid_argument("hardware counters are already being collected for another session with "
                                "other metrics; finalize it first or ask for the same metrics");
  if (!slots_) {
    api.acquireProfiler();
    try {
      startFirstSession(api, metrics, maxRanges, std::move(peakGBps), context, deviceOfContext);
    } catch (...) {
      api.releaseProfiler();
      throw;
    }
  }
  bool first = !slots_;
  slots_ |= 1u << slot;
  lock.unlock();
  // Outside our lock: the tracer calls observers under its own lock, and they take ours.
  if (first) CuptiTracer::instance().addObserver(this);
}

void CounterCollector::startFirstSession(const CountersApi& api, const std::vector<std::string>& metrics,
                                         size_t maxRanges, std::vector<double> peakGBps, CUcontext context,
                                         int deviceOfContext) {
  {
    std::vector<CUpti_MetricType> types;
    MetricHost catalogue(api, chipOfDevice(api, size_t(deviceOfContext)), {});
    for (const auto& m : metrics) types.push_back(catalogue.typeOf(m));  // unknown names throw here
    api_ = &api;
    metrics_ = metrics;
    types_ = std::move(types);
    metricNames_.clear();
    metricIds_.clear();
    for (const auto& m : metrics_) {
      metricNames_.push_back(m.c_str());
      metricIds_.push_back(intern(m));
    }
    maxRanges_ = maxRanges;
    peakGBps_ = std::move(peakGBps);
    stats_ = CounterStats();
    if (context) {
      ContextState& state = stateOf(context, deviceOfContext);
      if (state.failed) {
        std::string why = stats_.errors.empty() ? "unknown error" : stats_.errors.back();
        disableAll();
        throw Unsupported("cannot collect hardware counters on this GPU: " + why);
      }
    }
  }
}

CounterCollector::ContextState& CounterCollector::stateOf(CUcontext context, int device) {
  auto it = contexts_.find(context);
  if (it != contexts_.end()) return it->second;
  ContextState& state = contexts_[context];
  state.context = context;
  state.device = device;
  try {
    enable(state);
  } catch (const std::exception& e) {
    state.failed = true;
    noteError(e.what());
  }
  return state;
}

void CounterCollector::enable(ContextState& state) {
  const CountersApi& api = *api_;
  auto avail = FTP_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  avail.ctx = state.context;
  api.check(api.getCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
  std::vector<uint8_t> availability(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availability.data();
  api.check(api.getCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
  state.host = std::make_unique<MetricHost>(api, chipOfDevice(api, size_t(state.device)), std::move(availability));
  state.config = state.host->configure(metrics_, stats_.passes);

  auto on = FTP_PARAMS(CUpti_RangeProfiler_Enable_Params);
  on.ctx = state.context;
  api.check(api.rangeEnable(&on), "cuptiRangeProfilerEnable");
  state.object = on.pRangeProfilerObject;
  auto size = FTP_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  size.pRangeProfilerObject = state.object;
  size.pMetricNames = metricNames_.data();
  size.numMetrics = metricNames_.size();
  size.maxNumOfRanges = maxRanges_;
  size.maxNumRangeTreeNodes = uint32_t(maxRanges_);
  api.check(api.rangeGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");
  state.counterData.assign(size.counterDataSize, 0);
  startCollection(state);
}

// A fresh counter data image, the config, and Start: ranges from here on land in the image.
void CounterCollector::startCollection(ContextState& state) {
  const CountersApi& api = *api_;
  auto init = FTP_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = state.object;
  init.counterDataSize = state.counterData.size();
  init.pCounterData = state.counterData.data();
  api.check(api.rangeCounterDataImageInitialize(&init), "cuptiRangeProfilerCounterDataImageInitialize");
  auto config = FTP_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  config.pRangeProfilerObject = state.object;
  config.configSize = state.config.size();
  config.pConfig = state.config.data();
  config.counterDataImageSize = state.counterData.size();
  config.pCounterDataImage = state.counterData.data();
  config.range = CUPTI_AutoRange;
  config.replayMode = CUPTI_KernelReplay;
  config.maxRangesPerPass = maxRanges_;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  api.check(api.rangeSetConfig(&config), "cuptiRangeProfilerSetConfig");
  auto start = FTP_PARAMS(CUpti_RangeProfiler_Start_Params);
  start.pRangeProfilerObject = state.object;
  api.check(api.rangeStart(&start), "cuptiRangeProfilerStart");
}

void CounterCollector::collect(ContextState& state, bool restart) {
  if (state.failed || !state.object) return;
  const CountersApi& api = *api_;
  try {
    auto stop = FTP_PARAMS(CUpti_RangeProfiler_Stop_Params);
    stop.pRangeProfilerObject = state.object;
    api.check(api.rangeStop(&stop), "cuptiRangeProfilerStop");
    auto decode = FTP_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
    decode.pRangeProfilerObject = state.object;
    api.check(api.rangeDecodeData(&decode), "cuptiRangeProfilerDecodeData");
    auto info = FTP_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
    info.pCounterDataImage = state.counterData.data();
    info.counterDataImageSize = state.counterData.size();
    api.check(api.rangeGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");
    ++stats_.decodes;
    matchRanges(state, info.numTotalRanges);
    // Ranges CUPTI dropped belong to the launches right after the decoded ones.
    for (size_t i = 0; i < decode.numOfRangeDropped && !state.queued.empty(); ++i) state.queued.pop_front();
    stats_.rangesDropped += decode.numOfRangeDropped;
    stats_.launchesWithoutRange += state.queued.size();
    state.queued.clear();
    if (restart) startCollection(state);
  } catch (const std::exception& e) {
    stats_.launchesWithoutRange += state.queued.size();
    state.queued.clear();
    state.failed = true;
    noteError(e.what());
  }
}

void CounterCollector::matchRanges(ContextState& state, size_t ranges) {
  const CountersApi& api = *api_;
  for (size_t i = 0; i < ranges; ++i) {
    if (state.queued.empty()) {  // more ranges than launches seen: nothing to attach them to
      stats_.rangesWithoutLaunch += ranges - i;
      break;
    }
    QueuedLaunch launch = std::move(state.queued.front());
    state.queued.pop_front();
    auto name = FTP_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params);
    name.pCounterDataImage = state.counterData.data();
    name.counterDataImageSize = state.counterData.size();
    name.rangeIndex = i;
    name.rangeDelimiter = "/";
    if (api.rangeGetRangeInfo(&name) == CUPTI_SUCCESS && !rangeMatchesKernel(name.rangeName, launch.kernel))
      ++stats_.nameMismatches;
    emit(launch, state.device, state.host->evaluate(state.counterData, i, metricNames_));
  }
}

void CounterCollector::emit(const QueuedLaunch& launch, int device, const std::vector<double>& values) {
  std::vector<std::pair<std::string, double>> measured;
  LaunchExtra extra;
  for (size_t i = 0; i < values.size(); ++i) {
    measured.emplace_back(metrics_[i], values[i]);
    extra.metrics.emplace_back(metricIds_[i], values[i]);
  }
  double peak = device >= 0 && size_t(device) < peakGBps_.size() ? peakGBps_[device] : 0.0;
  for (const auto& d : derivedMetrics(measured, peak)) extra.metrics.emplace_back(intern(d.first), d.second);
  ++stats_.rangesCollected;
  for (int slot = 0; slot < kMaxSessions; ++slot)
    if (launch.slots & (1u << slot)) Profiler::instance().attachExtra(slot, launch.correlation, extra);
}

void CounterCollector::onLaunchEnter(CUcontext context, uint32_t correlation, const char* kernel,
                                     uint32_t activeSlots) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t slots = activeSlots & slots_;
  if (!slots || !api_) return;
  ContextState& state = stateOf(context, deviceOfCurrentContext());
  if (state.failed) return;
  state.queued.push_back(QueuedLaunch{correlation, slots, kernel ? kernel : ""});
}

// A runtime API call's callback data may carry no context at entry (the runtime creates the
// context inside the call): the thread's current context is the one the kernel runs in.
static CUcontext contextOf(const CUpti_CallbackData* cb) {
  return cb->context ? cb->context : reinterpret_cast<CUcontext>(currentContext());
}

bool isKernelLaunchApi(const char* functionName) {
  if (!functionName) return false;
  std::string name(functionName);
  bool launch = name.rfind("cuLaunch", 0) == 0 || name.rfind("cudaLaunch", 0) == 0;
  return launch && name.find("HostFunc") == std::string::npos;
}

void CounterCollector::onLaunchEnter(uint32_t correlation, uint32_t cbid, const void* cbData) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(cbData);
  // The tracer also reports copies, sets and graph launches: only single kernels make one range.
  if (!cb || !isKernelLaunchApi(cb->functionName)) return;
  // Counters are joined to CUPTI's launches: only the sessions that take CUPTI's records.
  onLaunchEnter(contextOf(cb), correlation, cb->symbolName, Profiler::instance().activeMask(TimeSource::Tracer));
}

void CounterCollector::onLaunchExit(uint32_t correlation, uint32_t cbid, const void* cbData) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(cbData);
  if (cb && isKernelLaunchApi(cb->functionName)) onLaunchExit(contextOf(cb), correlation);
}

void CounterCollector::onLaunchExit(CUcontext context, uint32_t correlation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!slots_) return;
  auto it = contexts_.find(context);
  if (it == contexts_.end()) return;
  // Empty the image before it overflows (kernel replay has finished this launch by now).
  if (it->second.queued.size() >= maxRanges_) collect(it->second, true);
}

void CounterCollector::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : contexts_) collect(entry.second, true);
}

void CounterCollector::removeSession(int slot) {
  bool last;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!(slots_ & (1u << slot))) return;
    last = slots_ == (1u << slot);
  }
  // Outside our lock (see addSession); after this no launch callback reaches us.
  if (last) CuptiTracer::instance().removeObserver(this);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : contexts_) collect(entry.second, !last);
  slots_ &= ~(1u << slot);
  if (last) {
    disableAll();
    api_->releaseProfiler();
  }
}

void CounterCollector::disableAll() {
  for (auto& entry : contexts_) {
    if (!entry.second.object) continue;
    auto off = FTP_PARAMS(CUpti_RangeProfiler_Disable_Params);
    off.pRangeProfilerObject = entry.second.object;
    api_->rangeDisable(&off);
  }
  contexts_.clear();
}

CounterStats CounterCollector::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::vector<std::string> CounterCollector::metrics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return metrics_;
}

std::vector<std::string> CounterCollector::meanMetrics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (size_t i = 0; i < metrics_.size(); ++i)
    if (!isAdditiveMetric(metrics_[i], types_[i])) out.push_back(metrics_[i]);
  for (const char* derived : {"achieved_occupancy (%)", "dram_bandwidth (GB/s)", "dram_bandwidth_util (%)"})
    out.emplace_back(derived);
  return out;
}

void CounterCollector::noteError(const std::string& message) {
  if (stats_.errors.size() < kMaxErrors) stats_.errors.push_back(message);
}

}  // namespace ftp
