// Loading libroctracer64.so and resolving its documented C functions (see roctracer_api.h).
#include "backends/roctracer/roctracer_api.h"

#include "core/library.h"

namespace ftp {

bool RoctracerApi::load(const std::string& libraryPath, std::string& error) {
  // A copy the process already holds (a HIP tool, or the test's stand-in) is the one whose
  // callbacks and pool HIP reports into.
  void* lib = openVendorLibrary(libraryPath, error);
  if (!lib) return false;
  bool ok = true;
  auto resolve = [&](auto& fn, const char* name, bool required) {
    if (!resolveSymbol(lib, name, fn) && required) {
      if (ok) error = libraryPath + " lacks " + name + " (is it libroctracer64 of ROCm 5 or later?)";
      ok = false;
    }
  };
  resolve(versionMajor, "roctracer_version_major", false);
  resolve(versionMinor, "roctracer_version_minor", false);
  resolve(errorString, "roctracer_error_string", true);
  resolve(opString, "roctracer_op_string", true);
  resolve(enableOpCallback, "roctracer_enable_op_callback", true);
  resolve(enableDomainCallback, "roctracer_enable_domain_callback", true);
  resolve(disableOpCallback, "roctracer_disable_op_callback", true);
  resolve(disableDomainCallback, "roctracer_disable_domain_callback", true);
  resolve(nextRecord, "roctracer_next_record", true);
  resolve(openPool, "roctracer_open_pool", true);
  resolve(closePool, "roctracer_close_pool", true);
  resolve(enableDomainActivity, "roctracer_enable_domain_activity", true);
  resolve(disableDomainActivity, "roctracer_disable_domain_activity", true);
  resolve(flushActivity, "roctracer_flush_activity", true);
  resolve(getTimestamp, "roctracer_get_timestamp", false);
  resolve(start, "roctracer_start", false);
  resolve(stop, "roctracer_stop", false);
  if (!ok) return false;
  handle = lib;
  path = libraryPath;
  return true;
}

std::string RoctracerApi::failure(const char* call, roc::Status status) const {
  // The interface says the caller owns the error string; older libraries return a static one,
  // so it is not freed (a few bytes on an error path).
  const char* text = errorString ? errorString() : nullptr;
  std::string out = std::string(call) + " failed in " + path;
  if (text && *text) out += std::string(": ") + text;
  return out + " (status " + std::to_string(status) + ")";
}

}  // namespace ftp
