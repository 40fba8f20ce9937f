#include "backends/nvidia/cupti_api.h"

#include "core/library.h"

namespace ftp {

void CuptiApi::load(const std::string& libraryPath, const std::string& prefix) {
  void* lib = openLibrary(libraryPath);
  resolveSymbols(lib, libraryPath, prefix,
                 {
                     {getVersion, "GetVersion", Need::Required},
                     {getResultString, "GetResultString", Need::Required},
                     {subscribe, "Subscribe", Need::Required},
                     {unsubscribe, "Unsubscribe", Need::Required},
                     {enableCallback, "EnableCallback", Need::Required},
                     {getCallbackName, "GetCallbackName", Need::Optional},
                     {registerCallbacks, "ActivityRegisterCallbacks", Need::Required},
                     {enable, "ActivityEnable", Need::Required},
                     {disable, "ActivityDisable", Need::Required},
                     {getNextRecord, "ActivityGetNextRecord", Need::Required},
                     {getNumDropped, "ActivityGetNumDroppedRecords", Need::Required},
                     {flushAll, "ActivityFlushAll", Need::Required},
                     {getTimestamp, "GetTimestamp", Need::Required},
                     {finalize, "Finalize", Need::Optional},
                     {getGraphNodeId, "GetGraphNodeId", Need::Optional},
                 });
  handle = lib;
  path = libraryPath;
}

std::string CuptiApi::describe(CUptiResult result) const {
  return describeResult(getResultString, result, CUPTI_SUCCESS);
}

}  // namespace ftp
