#include "backends/cann/mspti_api.h"

#include "core/library.h"

namespace ftp {

void MsptiApi::load(const std::string& libraryPath) {
  void* lib = openLibrary(libraryPath);
  resolveSymbols(lib, libraryPath, "mspti",
                 {
                     {subscribe, "Subscribe", Need::Required},
                     {unsubscribe, "Unsubscribe", Need::Required},
                     {enableCallback, "EnableCallback", Need::Required},
                     {registerCallbacks, "ActivityRegisterCallbacks", Need::Required},
                     {enable, "ActivityEnable", Need::Required},
                     {disable, "ActivityDisable", Need::Required},
                     {getNextRecord, "ActivityGetNextRecord", Need::Required},
                     {flushAll, "ActivityFlushAll", Need::Required},
                     {getNumDropped, "ActivityGetNumDroppedRecords", Need::Optional},
                     {getTimestamp, "GetTimestamp", Need::Optional},
                 });
  handle = lib;
  path = libraryPath;
}

std::string MsptiApi::describe(msptiResult result) const {
  switch (result) {
    case MSPTI_SUCCESS: return "MSPTI_SUCCESS";
    case MSPTI_ERROR_INVALID_PARAMETER: return "MSPTI_ERROR_INVALID_PARAMETER (error 1)";
    case MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: return "MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (error 2)";
    case MSPTI_ERROR_MAX_LIMIT_REACHED: return "MSPTI_ERROR_MAX_LIMIT_REACHED (error 3)";
    case MSPTI_ERROR_DEVICE_OFFLINE: return "MSPTI_ERROR_DEVICE_OFFLINE (error 4): the NPU is not available";
    case MSPTI_ERROR_QUEUE_EMPTY: return "MSPTI_ERROR_QUEUE_EMPTY (error 5)";
    case MSPTI_ERROR_INNER: return "MSPTI_ERROR_INNER (error 999)";
    default: return "error " + std::to_string(result);
  }
}

}  // namespace ftp
