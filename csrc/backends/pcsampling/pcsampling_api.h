// CUPTI's PC-sampling entry points (cupti_pcsampling.h), resolved with dlsym from the libcupti
// the activity tracer already loaded: PC sampling shares the process's one CUPTI copy.
#pragma once
#include <cupti_pcsampling.h>

#include <string>

namespace ftp {

struct PcSamplingApi {
  CUptiResult (*getResultString)(CUptiResult, const char**) = nullptr;
  CUptiResult (*enable)(CUpti_PCSamplingEnableParams*) = nullptr;
  CUptiResult (*disable)(CUpti_PCSamplingDisableParams*) = nullptr;
  CUptiResult (*start)(CUpti_PCSamplingStartParams*) = nullptr;
  CUptiResult (*stop)(CUpti_PCSamplingStopParams*) = nullptr;
  CUptiResult (*getData)(CUpti_PCSamplingGetDataParams*) = nullptr;
  CUptiResult (*setConfig)(CUpti_PCSamplingConfigurationInfoParams*) = nullptr;
  CUptiResult (*getNumStallReasons)(CUpti_PCSamplingGetNumStallReasonsParams*) = nullptr;
  CUptiResult (*getStallReasons)(CUpti_PCSamplingGetStallReasonsParams*) = nullptr;
  CUptiResult (*sassToSource)(CUpti_GetSassToSourceCorrelationParams*) = nullptr;
  CUptiResult (*cubinCrc)(CUpti_GetCubinCrcParams*) = nullptr;

  // Resolves every entry point from `handle` (a dlopen handle). Throws LibraryNotFound naming
  // the missing symbol when the library predates the PC-sampling API this backend uses.
  void load(void* handle, const std::string& libraryName);
  bool loaded() const { return enable != nullptr; }
  std::string describe(CUptiResult result) const;
};

}  // namespace ftp
