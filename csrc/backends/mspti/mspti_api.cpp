#include "backends/mspti/mspti_api.h"

#include "core/library.h"

namespace ftp {

bool MsptiApi::load(const std::string& libraryPath, std::string& error) {
  void* lib = openVendorLibrary(libraryPath, error);
  if (!lib) return false;
  const std::string prefix = "mspti";
  bool ok = true;
  auto resolve = [&](auto& fn, const char* suffix, bool required) {
    if (!resolveSymbol(lib, prefix + suffix, fn) && required) {
      if (ok) error = libraryPath + " lacks " + prefix + suffix;
      ok = false;
    }
  };
  resolve(subscribe, "Subscribe", true);
  resolve(unsubscribe, "Unsubscribe", true);
  resolve(enableCallback, "EnableCallback", true);
  resolve(registerCallbacks, "ActivityRegisterCallbacks", true);
  resolve(enable, "ActivityEnable", true);
  resolve(disable, "ActivityDisable", true);
  resolve(getNextRecord, "ActivityGetNextRecord", true);
  resolve(flushAll, "ActivityFlushAll", true);
  resolve(getNumDropped, "ActivityGetNumDroppedRecords", false);
  resolve(getTimestamp, "GetTimestamp", false);
  if (!ok) return false;
  handle = lib;
  path = libraryPath;
  return true;
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
