#include "backends/activity/activity_api.h"

#include "core/library.h"

namespace ftp {

bool ActivityApi::load(const std::string& libraryPath, const std::string& prefix, std::string& error) {
  void* lib = openVendorLibrary(libraryPath, error);
  if (!lib) return false;
  bool ok = true;
  auto resolve = [&](auto& fn, const char* suffix, bool required) {
    if (!resolveSymbol(lib, prefix + suffix, fn) && required) {
      if (ok) error = libraryPath + " lacks " + prefix + suffix;
      ok = false;
    }
  };
  resolve(getVersion, "GetVersion", true);
  resolve(getResultString, "GetResultString", true);
  resolve(subscribe, "Subscribe", true);
  resolve(unsubscribe, "Unsubscribe", true);
  resolve(enableCallback, "EnableCallback", true);
  resolve(getCallbackName, "GetCallbackName", false);
  resolve(registerCallbacks, "ActivityRegisterCallbacks", true);
  resolve(enable, "ActivityEnable", true);
  resolve(disable, "ActivityDisable", true);
  resolve(getNextRecord, "ActivityGetNextRecord", true);
  resolve(getNumDropped, "ActivityGetNumDroppedRecords", true);
  resolve(flushAll, "ActivityFlushAll", true);
  resolve(getTimestamp, "GetTimestamp", true);
  resolve(finalize, "Finalize", false);
  resolve(getGraphNodeId, "GetGraphNodeId", false);
  if (!ok) return false;
  handle = lib;
  path = libraryPath;
  return true;
}

std::string ActivityApi::describe(CUptiResult result) const {
  const char* text = nullptr;
  if (getResultString && getResultString(result, &text) == CUPTI_SUCCESS && text)
    return std::string(text) + " (error " + std::to_string(int(result)) + ")";
  return "error " + std::to_string(int(result));
}

}  // namespace ftp
