// Per-kernel hardware counters: CUPTI's Range Profiler in auto-range + kernel-replay mode gives
// one range per kernel launch, in launch order, per context. Launches are queued (correlation id,
// kernel name, sessions) as the launch callbacks see them; when a counter data image is close to
// full, and at flush/stop, the ranges are decoded, evaluated and matched to the queue in order.
// Nothing is lost silently: dropped ranges and launches left without a range are counted.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/counters/counters_api.h"
#include "backends/counters/metric_host.h"
#include "backends/dialect/tracer_observer.h"
#include "core/singleton.h"

namespace ftp {

struct CounterStats {
  size_t passes = 0;                 // replay passes per kernel for the metric set
  uint64_t rangesCollected = 0;      // launches that got metrics
  uint64_t rangesDropped = 0;        // ranges CUPTI reported as dropped at decode
  uint64_t launchesWithoutRange = 0; // queued launches that no range (nor drop) accounted for
  uint64_t rangesWithoutLaunch = 0;  // ranges beyond the launches queued (a launch not seen)
  uint64_t nameMismatches = 0;       // ranges whose name did not match the queued kernel's
  uint64_t decodes = 0;              // times an image was decoded
  std::vector<std::string> errors;   // failures on a context (counters off there), first few
};

// Is `metric` summed over launches (else averaged)? `.sum` rollups and plain counters add up;
// averages, ratios, throughputs, percentages, min/max and rates do not.
bool isAdditiveMetric(const std::string& metric, CUpti_MetricType type);

// Does the API named `functionName` (CUpti_CallbackData::functionName) launch one kernel? True
// for cuLaunch*/cudaLaunch* (kernels, cooperative kernels, grids), false for copies, sets, graph
// launches and host-function launches, which make no range (or several).
bool isKernelLaunchApi(const char* functionName);

// The calling thread's current CUcontext (0 when none or without a driver).
uintptr_t currentContext();
// The CUDA device of the calling thread's current context (0 without a driver: stand-in tests).
int deviceOfCurrentContext();

// Derived per launch from measured metrics, when their inputs are present:
// achieved_occupancy (%), dram_bandwidth (GB/s), dram_bandwidth_util (%) against `peakGBps` (>0).
std::vector<std::pair<std::string, double>> derivedMetrics(
    const std::vector<std::pair<std::string, double>>& measured, double peakGBps);

// Metrics go to the kernel nodes through Profiler::attachExtra, session by session.
class CounterCollector : public TracerObserver {
 public:
  static CounterCollector& instance();

  // Starts collecting `metrics` for session `slot` (validated on the first context's chip).
  // A second session must ask for the same metrics. `peakGBps[d]`: device d's DRAM peak.
  // `context`: a CUcontext to enable at once (else contexts are enabled at their first launch),
  // `deviceOfContext` its device index. The first session registers with the activity tracer.
  void addSession(const CountersApi& api, int slot, const std::vector<std::string>& metrics,
                  size_t maxRanges, std::vector<double> peakGBps, CUcontext context, int deviceOfContext);
  // Collects what is queued for every context; the session stops receiving metrics. The last
  // session disables the range profiler everywhere.
  void removeSession(int slot);
  // Decodes and evaluates everything launched so far (call with the device idle).
  void flush();
  CounterStats stats() const;
  std::vector<std::string> metrics() const;
  std::vector<std::string> meanMetrics() const;  // measured and derived metrics to average
  bool running() const { return slots_ != 0; }

  // Launch callbacks (on the launching thread; `context` is current there). `activeSlots`:
  // the sessions recording this launch. Never throw: failures go to stats().errors.
  void onLaunchEnter(CUcontext context, uint32_t correlation, const char* kernel, uint32_t activeSlots);
  void onLaunchExit(CUcontext context, uint32_t correlation);

  // TracerObserver: the activity tracer's launch callbacks (cbData is a CUpti_CallbackData).
  void onLaunchEnter(uint32_t correlation, uint32_t cbid, const void* cbData) override;
  void onLaunchExit(uint32_t correlation, uint32_t cbid, const void* cbData) override;

 private:
  struct QueuedLaunch {
    uint32_t correlation;
    uint32_t slots;
    std::string kernel;
  };
  struct ContextState {
    CUcontext context = nullptr;
    int device = 0;
    std::unique_ptr<MetricHost> host;
    std::vector<uint8_t> config;
    std::vector<uint8_t> counterData;
    CUpti_RangeProfiler_Object* object = nullptr;
    std::deque<QueuedLaunch> queued;
    bool failed = false;
  };

  friend CounterCollector& leaked<CounterCollector>();
  CounterCollector() = default;
  void startFirstSession(const CountersApi& api, const std::vector<std::string>& metrics, size_t maxRanges,
                         std::vector<double> peakGBps, CUcontext context, int deviceOfContext);
  ContextState& stateOf(CUcontext context, int device);
  void enable(ContextState& state);
  void startCollection(ContextState& state);
  void collect(ContextState& state, bool restart);
  void matchRanges(ContextState& state, size_t ranges);
  void emit(const QueuedLaunch& launch, int device, const std::vector<double>& values);
  void disableAll();
  void noteError(const std::string& message);

  mutable std::mutex mutex_;
  const CountersApi* api_ = nullptr;
  uint32_t slots_ = 0;
  std::vector<std::string> metrics_;
  std::vector<const char*> metricNames_;  // into metrics_, for CUPTI
  std::vector<CUpti_MetricType> types_;
  std::vector<uint32_t> metricIds_;  // interned metrics_
  size_t maxRanges_ = 0;
  std::vector<double> peakGBps_;
  std::map<CUcontext, ContextState> contexts_;
  CounterStats stats_;
};

}  // namespace ftp
