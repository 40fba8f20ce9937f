#include "backends/mthreads/mupti_api.h"

#include "core/library.h"

namespace ftp {

void MuptiApi::load(const std::string& libraryPath) {
  void* lib = openLibrary(libraryPath);
  resolveSymbols(lib, libraryPath, "mupti",
                 {
                     {getVersion, "GetVersion", Need::Optional},
                     {getResultString, "GetResultString", Need::Required},
                     {subscribe, "Subscribe", Need::Required},
                     {unsubscribe, "Unsubscribe", Need::Required},
                     {enableCallback, "EnableCallback", Need::Required},
                     {getCallbackName, "GetCallbackName", Need::Required},
                     {registerCallbacks, "ActivityRegisterCallbacks", Need::Required},
                     {enable, "ActivityEnable", Need::Required},
                     {disable, "ActivityDisable", Need::Required},
                     {getNextRecord, "ActivityGetNextRecord", Need::Required},
                     {getNumDropped, "ActivityGetNumDroppedRecords", Need::Required},
                     {flushAll, "ActivityFlushAll", Need::Required},
                     {getTimestamp, "GetTimestamp", Need::Required},
                     {finalize, "Finalize", Need::Optional},
                     {enableLaunchAttributes, "ActivityEnableLaunchAttributes", Need::Optional},
                 });
  handle = lib;
  path = libraryPath;
}

std::string MuptiApi::describe(MUptiResult result) const {
  std::string out = describeResult(getResultString, result, MUptiResult(MUPTI_SUCCESS));
  if (result == MUPTI_ERROR_NOT_INITIALIZED)
    out += "; MUPTI reaches the MUSA driver through muGetExportTable in libmusa.so, which it did not find "
           "(is the MUSA driver installed and libmusa.so on the loader path?)";
  return out;
}

}  // namespace ftp
