#include "backends/counters/counters_api.h"

#include <dlfcn.h>
#include <unistd.h>

#include <mutex>

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
    if (access(candidate.c_str(), R_OK) == 0) dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
}

}  // namespace

const CountersApi& CountersApi::load(const std::string& path) {
  static std::mutex mutex;
  static CountersApi* api = nullptr;  // lives for the process: the library stays mapped
  std::lock_guard<std::mutex> lock(mutex);
  if (api && api->path == path) return *api;
  std::string error;
  void* lib = openVendorLibrary(path, error);
  if (!lib) throw std::runtime_error(error);
  auto table = new CountersApi();
  std::string missing;
  auto need = [&](auto& fn, const char* name) {
    if (!resolveSymbol(lib, name, fn) && missing.empty()) missing = name;
  };
  need(table->getResultString, "cuptiGetResultString");
  need(table->profilerInitialize, "cuptiProfilerInitialize");
  need(table->profilerDeInitialize, "cuptiProfilerDeInitialize");
  need(table->deviceGetChipName, "cuptiDeviceGetChipName");
  need(table->getCounterAvailability, "cuptiProfilerGetCounterAvailability");
  need(table->hostInitialize, "cuptiProfilerHostInitialize");
  need(table->hostDeinitialize, "cuptiProfilerHostDeinitialize");
  need(table->hostGetSupportedChips, "cuptiProfilerHostGetSupportedChips");
  need(table->hostGetBaseMetrics, "cuptiProfilerHostGetBaseMetrics");
  need(table->hostGetSubMetrics, "cuptiProfilerHostGetSubMetrics");
  need(table->hostGetMetricProperties, "cuptiProfilerHostGetMetricProperties");
  need(table->hostConfigAddMetrics, "cuptiProfilerHostConfigAddMetrics");
  need(table->hostGetConfigImageSize, "cuptiProfilerHostGetConfigImageSize");
  need(table->hostGetConfigImage, "cuptiProfilerHostGetConfigImage");
  need(table->hostGetNumOfPasses, "cuptiProfilerHostGetNumOfPasses");
  need(table->hostEvaluateToGpuValues, "cuptiProfilerHostEvaluateToGpuValues");
  need(table->rangeEnable, "cuptiRangeProfilerEnable");
  need(table->rangeDisable, "cuptiRangeProfilerDisable");
  need(table->rangeSetConfig, "cuptiRangeProfilerSetConfig");
  need(table->rangeStart, "cuptiRangeProfilerStart");
  need(table->rangeStop, "cuptiRangeProfilerStop");
  need(table->rangeDecodeData, "cuptiRangeProfilerDecodeData");
  need(table->rangeGetCounterDataSize, "cuptiRangeProfilerGetCounterDataSize");
  need(table->rangeCounterDataImageInitialize, "cuptiRangeProfilerCounterDataImageInitialize");
  need(table->rangeGetCounterDataInfo, "cuptiRangeProfilerGetCounterDataInfo");
  need(table->rangeGetRangeInfo, "cuptiRangeProfilerCounterDataGetRangeInfo");
  if (!missing.empty()) {
    delete table;
    throw std::runtime_error(path + " lacks " + missing +
                             ": hardware counters need CUPTI's Range Profiler and Profiler Host APIs, "
                             "CUPTI 12.6 or newer (CUDA 12.6+); install nvidia-cuda-cupti>=12.6 or point "
                             "FLAGTREE_PROFILER_CUPTI_PATH at a newer libcupti");
  }
  preloadPerfLibraries(path);
  table->path = path;
  table->handle = lib;
  // A table for another path replaces this one; the old one is kept (a collector may hold it).
  api = table;
  return *api;
}

void CountersApi::check(CUptiResult result, const char* what) const {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  std::string message = what;
  message += ": ";
  if (getResultString && getResultString(result, &text) == CUPTI_SUCCESS && text) message += text;
  message += " (CUPTI error " + std::to_string(int(result)) + ")";
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
