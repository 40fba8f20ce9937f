#include "backends/mupti/mupti_api.h"

#include "core/library.h"

namespace ftp {

bool MuptiApi::load(const std::string& libraryPath, std::string& error) {
  void* lib = openVendorLibrary(libraryPath, error);
  if (!lib) return false;
  const std::string prefix = "mupti";
  bool ok = true;
  auto resolve = [&](auto& fn, const char* suffix, bool required) {
    if (!resolveSymbol(lib, prefix + suffix, fn) && required) {
      if (ok) error = libraryPath + " lacks " + prefix + suffix;
      ok = false;
    }
  };
  resolve(getVersion, "GetVersion", false);
  resolve(getResultString, "GetResultString", true);
  resolve(subscribe, "Subscribe", true);
  resolve(unsubscribe, "Unsubscribe", true);
  resolve(enableCallback, "EnableCallback", true);
  resolve(getCallbackName, "GetCallbackName", true);
  resolve(registerCallbacks, "ActivityRegisterCallbacks", true);
  resolve(enable, "ActivityEnable", true);
  resolve(disable, "ActivityDisable", true);
  resolve(getNextRecord, "ActivityGetNextRecord", true);
  resolve(getNumDropped, "ActivityGetNumDroppedRecords", true);
  resolve(flushAll, "ActivityFlushAll", true);
  resolve(getTimestamp, "GetTimestamp", true);
  resolve(finalize, "Finalize", false);
  resolve(enableLaunchAttributes, "ActivityEnableLaunchAttributes", false);
  if (!ok) return false;
  handle = lib;
  path = libraryPath;
  return true;
}

std::string MuptiApi::describe(MUptiResult result) const {
  std::string out;
  const char* text = nullptr;
  if (getResultString && getResultString(result, &text) == MUPTI_SUCCESS && text)
    out = std::string(text) + " (error " + std::to_string(result) + ")";
  else
    out = "error " + std::to_string(result);
  if (result == MUPTI_ERROR_NOT_INITIALIZED)
    out += "; MUPTI reaches the MUSA driver through muGetExportTable in libmusa.so, which it did not find "
           "(is the MUSA driver installed and libmusa.so on the loader path?)";
  return out;
}

}  // namespace ftp
