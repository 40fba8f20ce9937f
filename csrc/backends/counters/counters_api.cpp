#include "backends/counters/counters_api.h"

#include <unistd.h>

#include <mutex>

#include "core/errors.h"
#include "core/library.h"

namespace ftp {

namespace {

// libcupti finds libnvperf_host/_target at run time; loading the copies beside it first
// (RTLD_GLOBAL) makes sure the evaluator matches this libcupti, not another on the loader path.
void preloadPerfLibraries(const std::string& cuptiPath) {
  auto slash = cuptiPath.rfind('/');
  if (slash == std::string::npos) return;
  std::string folder = cuptiPath.substr(0, slash + 1);
  for (const char* name : {"libnvperf_host.so", "libnvperf_target.so"}) {
    std::string candidate = folder + name;
    if (access(candidate.c_str(), R_OK) != 0) continue;
    try {
      openLibrary(candidate);
    } catch (const LibraryNotFound&) {
      // libcupti then finds its own copy on the loader path
    }
  }
}

}  // namespace

const CountersApi& CountersApi::load(const std::string& path) {
  static std::mutex mutex;
  static CountersApi* api = nullptr;  // lives for the process: the library stays mapped
  std::lock_guard<std::mutex> lock(mutex);
  if (api && api->path == path) return *api;
  void* lib = openLibrary(path);
  CountersApi table;
  resolveSymbols(lib, path, "cupti",
                 {
                     {table.getResultString, "GetResultString", Need::Required},
                     {table.profilerInitialize, "ProfilerInitialize", Need::Required},
                     {table.profilerDeInitialize, "ProfilerDeInitialize", Need::Required},
                     {table.deviceGetChipName, "DeviceGetChipName", Need::Required},
                     {table.getCounterAvailability, "ProfilerGetCounterAvailability", Need::Required},
                     {table.hostInitialize, "ProfilerHostInitialize", Need::Required},
                     {table.hostDeinitialize, "ProfilerHostDeinitialize", Need::Required},
                     {table.hostGetSupportedChips, "ProfilerHostGetSupportedChips", Need::Required},
                     {table.hostGetBaseMetrics, "ProfilerHostGetBaseMetrics", Need::Required},
                     {table.hostGetSubMetrics, "ProfilerHostGetSubMetrics", Need::Required},
                     {table.hostGetMetricProperties, "ProfilerHostGetMetricProperties", Need::Required},
                     {table.hostConfigAddMetrics, "ProfilerHostConfigAddMetrics", Need::Required},
                     {table.hostGetConfigImageSize, "ProfilerHostGetConfigImageSize", Need::Required},
                     {table.hostGetConfigImage, "ProfilerHostGetConfigImage", Need::Required},
                     {table.hostGetNumOfPasses, "ProfilerHostGetNumOfPasses", Need::Required},
                     {table.hostEvaluateToGpuValues, "ProfilerHostEvaluateToGpuValues", Need::Required},
                     {table.rangeEnable, "RangeProfilerEnable", Need::Required},
                     {table.rangeDisable, "RangeProfilerDisable", Need::Required},
                     {table.rangeSetConfig, "RangeProfilerSetConfig", Need::Required},
                     {table.rangeStart, "RangeProfilerStart", Need::Required},
                     {table.rangeStop, "RangeProfilerStop", Need::Required},
                     {table.rangeDecodeData, "RangeProfilerDecodeData", Need::Required},
                     {table.rangeGetCounterDataSize, "RangeProfilerGetCounterDataSize", Need::Required},
                     {table.rangeCounterDataImageInitialize, "RangeProfilerCounterDataImageInitialize",
                      Need::Required},
                     {table.rangeGetCounterDataInfo, "RangeProfilerGetCounterDataInfo", Need::Required},
                     {table.rangeGetRangeInfo, "RangeProfilerCounterDataGetRangeInfo", Need::Required},
                 },
                 ": hardware counters need CUPTI's Range Profiler and Profiler Host APIs, CUPTI 12.6 or "
                 "newer (CUDA 12.6+); install nvidia-cuda-cupti>=12.6 or point FLAGTREE_PROFILER_CUPTI_PATH "
                 "at a newer libcupti");
  preloadPerfLibraries(path);
  table.path = path;
  table.handle = lib;
  // A table for another path replaces this one; the old one is kept (a collector may hold it).
  api = new CountersApi(table);
  return *api;
}

void CountersApi::check(CUptiResult result, const char* what) const {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  std::string message = what;
  message += ": ";
  if (getResultString && getResultString(result, &text) == CUPTI_SUCCESS && text) message += text;
  message += " (CUPTI error " + std::to_string(int(result)) + ")";
  if (result == CUPTI_ERROR_NOT_INITIALIZED) throw NotInitialized(message);
  if (result == CUPTI_ERROR_NOT_SUPPORTED) throw Unsupported(message);
  throw std::runtime_error(message);
}

namespace {
std::mutex profilerUsersMutex;
int profilerUsers = 0;
}  // namespace

void CountersApi::acquireProfiler() const {
  std::lock_guard<std::mutex> lock(profilerUsersMutex);
  if (profilerUsers == 0) {
    auto init = FTP_PARAMS(CUpti_Profiler_Initialize_Params);
    check(profilerInitialize(&init), "cuptiProfilerInitialize");
  }
  ++profilerUsers;
}

void CountersApi::releaseProfiler() const {
  std::lock_guard<std::mutex> lock(profilerUsersMutex);
  if (profilerUsers > 0 && --profilerUsers == 0) {
    auto done = FTP_PARAMS(CUpti_Profiler_DeInitialize_Params);
    profilerDeInitialize(&done);
  }
}

}  // namespace ftp
