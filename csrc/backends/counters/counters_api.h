// CUPTI's Profiler Host API (metric names, config images, evaluation: NVIDIA's metric evaluator,
// libnvperf_host underneath) and Range Profiler API (collection on a context), resolved with dlsym
// on the libcupti the activity tracer uses. Range Profiler appeared in CUPTI 12.6.
#pragma once
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <stdexcept>
#include <string>

namespace ftp {

struct CountersApi {
#define FTP_COUNTERS_FN(name, Params) CUptiResult (*name)(Params*) = nullptr;
  FTP_COUNTERS_FN(profilerInitialize, CUpti_Profiler_Initialize_Params)
  FTP_COUNTERS_FN(profilerDeInitialize, CUpti_Profiler_DeInitialize_Params)
  FTP_COUNTERS_FN(deviceGetChipName, CUpti_Device_GetChipName_Params)
  FTP_COUNTERS_FN(getCounterAvailability, CUpti_Profiler_GetCounterAvailability_Params)
  FTP_COUNTERS_FN(hostInitialize, CUpti_Profiler_Host_Initialize_Params)
  FTP_COUNTERS_FN(hostDeinitialize, CUpti_Profiler_Host_Deinitialize_Params)
  FTP_COUNTERS_FN(hostGetSupportedChips, CUpti_Profiler_Host_GetSupportedChips_Params)
  FTP_COUNTERS_FN(hostGetBaseMetrics, CUpti_Profiler_Host_GetBaseMetrics_Params)
  FTP_COUNTERS_FN(hostGetSubMetrics, CUpti_Profiler_Host_GetSubMetrics_Params)
  FTP_COUNTERS_FN(hostGetMetricProperties, CUpti_Profiler_Host_GetMetricProperties_Params)
  FTP_COUNTERS_FN(hostConfigAddMetrics, CUpti_Profiler_Host_ConfigAddMetrics_Params)
  FTP_COUNTERS_FN(hostGetConfigImageSize, CUpti_Profiler_Host_GetConfigImageSize_Params)
  FTP_COUNTERS_FN(hostGetConfigImage, CUpti_Profiler_Host_GetConfigImage_Params)
  FTP_COUNTERS_FN(hostGetNumOfPasses, CUpti_Profiler_Host_GetNumOfPasses_Params)
  FTP_COUNTERS_FN(hostEvaluateToGpuValues, CUpti_Profiler_Host_EvaluateToGpuValues_Params)
  FTP_COUNTERS_FN(rangeEnable, CUpti_RangeProfiler_Enable_Params)
  FTP_COUNTERS_FN(rangeDisable, CUpti_RangeProfiler_Disable_Params)
  FTP_COUNTERS_FN(rangeSetConfig, CUpti_RangeProfiler_SetConfig_Params)
  FTP_COUNTERS_FN(rangeStart, CUpti_RangeProfiler_Start_Params)
  FTP_COUNTERS_FN(rangeStop, CUpti_RangeProfiler_Stop_Params)
  FTP_COUNTERS_FN(rangeDecodeData, CUpti_RangeProfiler_DecodeData_Params)
  FTP_COUNTERS_FN(rangeGetCounterDataSize, CUpti_RangeProfiler_GetCounterDataSize_Params)
  FTP_COUNTERS_FN(rangeCounterDataImageInitialize, CUpti_RangeProfiler_CounterDataImage_Initialize_Params)
  FTP_COUNTERS_FN(rangeGetCounterDataInfo, CUpti_RangeProfiler_GetCounterDataInfo_Params)
  FTP_COUNTERS_FN(rangeGetRangeInfo, CUpti_RangeProfiler_CounterData_GetRangeInfo_Params)
#undef FTP_COUNTERS_FN
  CUptiResult (*getResultString)(CUptiResult, const char**) = nullptr;

  std::string path;
  void* handle = nullptr;

  // The table, loaded once from `path` (the libcupti the nvidia backend picked). Throws
  // LibraryNotFound naming the library and what it lacks (CUPTI older than 12.6).
  static const CountersApi& load(const std::string& path);
  // Throws "<what>: <CUPTI's message> (CUPTI error N)" unless `result` is CUPTI_SUCCESS: as
  // NotInitialized or Unsupported (core/errors.h) where CUPTI says so, else std::runtime_error.
  void check(CUptiResult result, const char* what) const;
  // cuptiProfilerInitialize on the first of nested uses, cuptiProfilerDeInitialize when the last
  // ends (the tracer's cuptiFinalize at the end of a run would leave a stale initialisation).
  void acquireProfiler() const;
  void releaseProfiler() const;
};

// Every params struct starts with structSize and pPriv: zeroed, size set from the header.
template <typename Params>
Params cuptiParams(size_t structSize) {
  Params p{};
  p.structSize = structSize;
  return p;
}
#define FTP_PARAMS(Type) ::ftp::cuptiParams<Type>(Type##_STRUCT_SIZE)

}  // namespace ftp
