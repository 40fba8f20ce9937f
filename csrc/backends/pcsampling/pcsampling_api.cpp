#include "backends/pcsampling/pcsampling_api.h"

#include "core/library.h"

namespace ftp {

bool PcSamplingApi::load(void* handle, const std::string& libraryName, std::string& error) {
  PcSamplingApi api;
  bool ok = true;
  auto resolve = [&](auto& fn, const char* name) {
    if (!resolveSymbol(handle, name, fn) && ok) {
      error = libraryName + " lacks " + name + " (PC sampling needs CUPTI from CUDA 12 or later)";
      ok = false;
    }
  };
  resolve(api.getResultString, "cuptiGetResultString");
  resolve(api.enable, "cuptiPCSamplingEnable");
  resolve(api.disable, "cuptiPCSamplingDisable");
  resolve(api.start, "cuptiPCSamplingStart");
  resolve(api.stop, "cuptiPCSamplingStop");
  resolve(api.getData, "cuptiPCSamplingGetData");
  resolve(api.setConfig, "cuptiPCSamplingSetConfigurationAttribute");
  resolve(api.getNumStallReasons, "cuptiPCSamplingGetNumStallReasons");
  resolve(api.getStallReasons, "cuptiPCSamplingGetStallReasons");
  resolve(api.sassToSource, "cuptiGetSassToSourceCorrelation");
  resolve(api.cubinCrc, "cuptiGetCubinCrc");
  if (ok) *this = api;
  return ok;
}

std::string PcSamplingApi::describe(CUptiResult result) const {
  const char* text = nullptr;
  if (getResultString && getResultString(result, &text) == CUPTI_SUCCESS && text)
    return std::string(text) + " (error " + std::to_string(int(result)) + ")";
  return "error " + std::to_string(int(result));
}

}  // namespace ftp
