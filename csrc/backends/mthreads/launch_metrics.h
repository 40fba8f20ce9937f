// The mthreads backend's per-kernel vendor metrics (mode vendor_metrics=occupancy,
// resource_usage,launch_stats): an observer of the MUPTI tracer's launch callbacks that asks
// libmusa, at each driver launch (muLaunchKernel, muLaunchKernel_ptsz), for the kernel's
// resources (muFuncGetAttribute) and theoretical occupancy
// (muOccupancyMaxActiveBlocksPerMultiprocessor with the launch's block size and dynamic shared
// memory), and attaches them to the launch as extras of each registered session: they land on
// the kernel node when its record arrives. Values are cached per (function, block size, shared
// memory, device), so a repeated launch costs one map look-up. Runtime-API launches
// (musaLaunchKernel: their callback carries a host stub, not a MUfunction) get none.
#pragma once
#include "core/singleton.h"
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/dialect/tracer_observer.h"
#include "backends/mthreads/mupti_types.h"
#include "context/thread_state.h"

namespace ftp {

class MusaLaunchMetrics : public TracerObserver {
 public:
  enum Group : uint32_t { kOccupancy = 1, kResourceUsage = 2, kLaunchStats = 4 };
  static MusaLaunchMetrics& instance();
  // Starts (or changes) the metric groups attached for the session in `slot`; 0 stops it.
  // Registers with the MUPTI tracer while any session is registered.
  void setSession(int slot, uint32_t groups);
  // Metric names of `groups`, to be declared mean metrics (ratios and sizes, not sums).
  static std::vector<const char*> metricNames(uint32_t groups);
  uint64_t launchesMeasured() const { return measured_.load(); }

  void onLaunchEnter(uint32_t correlation, uint32_t cbid, const void* cbData) override;

 private:
  struct Key {
    const void* function;
    uint32_t blockSize, sharedMemory;
    int device;
    bool operator==(const Key& o) const {
      return function == o.function && blockSize == o.blockSize && sharedMemory == o.sharedMemory && device == o.device;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  // Per group, the metrics of one (function, block, shared memory, device).
  using Metrics = std::vector<std::pair<uint32_t, double>>;
  struct Measured {
    Metrics byGroup[3];
  };
  friend MusaLaunchMetrics& leaked<MusaLaunchMetrics>();
  MusaLaunchMetrics() = default;
  bool isDriverLaunch(uint32_t cbid, const MUpti_CallbackData* cb);
  const Measured& measure(const muLaunchKernel_params& p, int device);

  std::mutex mutex_;  // sessions and cache
  uint32_t groups_[kMaxSessions] = {};  // by slot
  std::atomic<uint32_t> slots_{0};  // slots with groups
  std::unordered_map<Key, Measured, KeyHash> cache_;
  static constexpr uint32_t kMaxCbid = 4096;
  std::atomic<int8_t> launchIds_[kMaxCbid] = {};  // by cbid: 0 unknown, 1 a driver launch, -1 not
  std::atomic<uint64_t> measured_{0};
};

}  // namespace ftp
