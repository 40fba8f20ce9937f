#include "backends/mthreads/launch_metrics.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "backends/mthreads/mupti_dialect.h"
#include "backends/mthreads/musa_driver.h"
#include "core/strings.h"
#include "session/profiler.h"
#include "core/singleton.h"

namespace ftp {
namespace {

const char* const kOccupancyNames[] = {"occupancy", "active_blocks_per_sm"};
const char* const kResourceNames[] = {"registers_per_thread", "static_shared_memory (B)",
                                      "dynamic_shared_memory (B)", "local_memory_per_thread (B)"};
const char* const kLaunchNames[] = {"grid_size", "block_size"};

}  // namespace

MusaLaunchMetrics& MusaLaunchMetrics::instance() {
  return leaked<MusaLaunchMetrics>();
}

size_t MusaLaunchMetrics::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<const void*>()(k.function);
  h ^= (size_t(k.blockSize) << 20) ^ (size_t(k.sharedMemory) << 1) ^ size_t(k.device + 1) * 0x9E3779B97F4A7C15ull;
  return h;
}

std::vector<const char*> MusaLaunchMetrics::metricNames(uint32_t groups) {
  std::vector<const char*> out;
  if (groups & kOccupancy) out.insert(out.end(), std::begin(kOccupancyNames), std::end(kOccupancyNames));
  if (groups & kResourceUsage) out.insert(out.end(), std::begin(kResourceNames), std::end(kResourceNames));
  if (groups & kLaunchStats) out.insert(out.end(), std::begin(kLaunchNames), std::end(kLaunchNames));
  return out;
}

void MusaLaunchMetrics::setSession(int slot, uint32_t groups) {
  bool first = false, last = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint32_t before = slots_.load();
    groups_[slot] = groups;
    const uint32_t after = groups ? (before | (1u << slot)) : (before & ~(1u << slot));
    slots_.store(after);
    first = !before && after;
    last = before && !after;
  }
  if (first) MuptiTracer::instance().addObserver(this);
  if (last) MuptiTracer::instance().removeObserver(this);
}

bool MusaLaunchMetrics::isDriverLaunch(uint32_t cbid, const MUpti_CallbackData* cb) {
  // Classified by name once per callback id (ids differ between MUSA versions).
  int8_t known = cbid < kMaxCbid ? launchIds_[cbid].load(std::memory_order_relaxed) : 0;
  if (known) return known > 0;
  const char* name = cb->functionName ? cb->functionName : "";
  const bool launch = std::strcmp(name, "muLaunchKernel") == 0 || std::strcmp(name, "muLaunchKernel_ptsz") == 0;
  if (cbid < kMaxCbid) launchIds_[cbid].store(launch ? 1 : -1, std::memory_order_relaxed);
  return launch;
}

const MusaLaunchMetrics::Measured& MusaLaunchMetrics::measure(const muLaunchKernel_params& p, int device) {
  const uint32_t blockSize = p.blockDimX * p.blockDimY * p.blockDimZ;
  const Key key{p.f, blockSize, p.sharedMemBytes, device};
  auto found = cache_.find(key);
  if (found != cache_.end()) return found->second;
  MusaDriver& musa = MusaDriver::instance();
  Measured m;
  auto add = [](Metrics& into, const char* name, double value) { into.emplace_back(intern(name), value); };
  // Theoretical occupancy: resident warps of this kernel per SM over the SM's most warps.
  const int blocks = musa.maxActiveBlocksPerSm(p.f, int(blockSize), p.sharedMemBytes);
  const int dev = device < 0 ? 0 : device;
  const int warp = std::max(1, musa.deviceAttribute(MU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
  const int maxThreads = musa.deviceAttribute(MU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
  const double warpsPerBlock = double((blockSize + warp - 1) / warp);
  const double maxWarps = double(maxThreads / warp);
  if (maxWarps > 0) add(m.byGroup[0], kOccupancyNames[0], std::min(1.0, blocks * warpsPerBlock / maxWarps));
  add(m.byGroup[0], kOccupancyNames[1], blocks);
  add(m.byGroup[1], kResourceNames[0], musa.functionAttribute(MU_FUNC_ATTRIBUTE_NUM_REGS, p.f));
  add(m.byGroup[1], kResourceNames[1], musa.functionAttribute(MU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, p.f));
  add(m.byGroup[1], kResourceNames[2], p.sharedMemBytes);
  add(m.byGroup[1], kResourceNames[3], musa.functionAttribute(MU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, p.f));
  add(m.byGroup[2], kLaunchNames[0], double(p.gridDimX) * p.gridDimY * p.gridDimZ);
  add(m.byGroup[2], kLaunchNames[1], blockSize);
  return cache_.emplace(key, std::move(m)).first->second;
}

void MusaLaunchMetrics::onLaunchEnter(uint32_t correlation, uint32_t cbid, const void* cbData) {
  const uint32_t slots = slots_.load(std::memory_order_acquire);
  const auto* cb = static_cast<const MUpti_CallbackData*>(cbData);
  if (!slots || !cb || !isDriverLaunch(cbid, cb)) return;
  const auto* params = static_cast<const muLaunchKernel_params*>(cb->functionParams);
  if (!params || !params->f) return;
  const int device = MusaDriver::instance().currentDevice();  // the launching thread's context
  Profiler& profiler = Profiler::instance();
  std::lock_guard<std::mutex> lock(mutex_);
  const Measured& m = measure(*params, device);
  measured_.fetch_add(1, std::memory_order_relaxed);
  for (int slot = 0; slot < kMaxSessions; ++slot) {
    if (!(slots & (1u << slot)) || !profiler.isActive(slot)) continue;
    LaunchExtra extra;
    for (int g = 0; g < 3; ++g)
      if (groups_[slot] & (1u << g)) extra.metrics.insert(extra.metrics.end(), m.byGroup[g].begin(), m.byGroup[g].end());
    if (!extra.metrics.empty()) profiler.attachExtra(slot, correlation, std::move(extra));
  }
}

}  // namespace ftp
