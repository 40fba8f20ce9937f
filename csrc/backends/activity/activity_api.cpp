#include "backends/activity/activity_api.h"

#include <dlfcn.h>

#include <type_traits>

namespace ftp {

bool ActivityApi::load(const std::string& libraryPath, const std::string& prefix, std::string& error) {
  // RTLD_NOLOAD first: if the process already holds this library, use that very copy.
  void* lib = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  if (!lib) lib = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char* why = dlerror();
    error = "cannot load " + libraryPath + ": " + (why ? why : "unknown error");
    return false;
  }
  bool ok = true;
  auto resolve = [&](auto& fn, const char* suffix, bool required) {
    fn = reinterpret_cast<std::decay_t<decltype(fn)>>(dlsym(lib, (prefix + suffix).c_str()));
    if (!fn && required) {
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
