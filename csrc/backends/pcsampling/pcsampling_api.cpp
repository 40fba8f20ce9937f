#include "backends/pcsampling/pcsampling_api.h"

#include "core/library.h"

namespace ftp {

void PcSamplingApi::load(void* handle, const std::string& libraryName) {
  PcSamplingApi api;
  resolveSymbols(handle, libraryName, "cupti",
                 {
                     {api.getResultString, "GetResultString", Need::Required},
                     {api.enable, "PCSamplingEnable", Need::Required},
                     {api.disable, "PCSamplingDisable", Need::Required},
                     {api.start, "PCSamplingStart", Need::Required},
                     {api.stop, "PCSamplingStop", Need::Required},
                     {api.getData, "PCSamplingGetData", Need::Required},
                     {api.setConfig, "PCSamplingSetConfigurationAttribute", Need::Required},
                     {api.getNumStallReasons, "PCSamplingGetNumStallReasons", Need::Required},
                     {api.getStallReasons, "PCSamplingGetStallReasons", Need::Required},
                     {api.sassToSource, "GetSassToSourceCorrelation", Need::Required},
                     {api.cubinCrc, "GetCubinCrc", Need::Required},
                 },
                 " (PC sampling needs CUPTI from CUDA 12 or later)");
  *this = api;
}

std::string PcSamplingApi::describe(CUptiResult result) const {
  return describeResult(getResultString, result, CUPTI_SUCCESS);
}

}  // namespace ftp
