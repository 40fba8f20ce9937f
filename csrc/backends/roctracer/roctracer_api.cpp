// Loading libroctracer64.so and resolving its documented C functions (see roctracer_api.h).
#include "backends/roctracer/roctracer_api.h"

#include "core/library.h"

namespace ftp {

void RoctracerApi::load(const std::string& libraryPath) {
  // A copy the process already holds (a HIP tool, or the test's stand-in) is the one whose
  // callbacks and pool HIP reports into.
  void* lib = openLibrary(libraryPath);
  resolveSymbols(lib, libraryPath, "roctracer_",
                 {
                     {versionMajor, "version_major", Need::Optional},
                     {versionMinor, "version_minor", Need::Optional},
                     {errorString, "error_string", Need::Required},
                     {opString, "op_string", Need::Required},
                     {enableOpCallback, "enable_op_callback", Need::Required},
                     {enableDomainCallback, "enable_domain_callback", Need::Required},
                     {disableOpCallback, "disable_op_callback", Need::Required},
                     {disableDomainCallback, "disable_domain_callback", Need::Required},
                     {nextRecord, "next_record", Need::Required},
                     {openPool, "open_pool", Need::Required},
                     {closePool, "close_pool", Need::Required},
                     {enableDomainActivity, "enable_domain_activity", Need::Required},
                     {disableDomainActivity, "disable_domain_activity", Need::Required},
                     {flushActivity, "flush_activity", Need::Required},
                     {getTimestamp, "get_timestamp", Need::Optional},
                     {start, "start", Need::Optional},
                     {stop, "stop", Need::Optional},
                 },
                 " (is it libroctracer64 of ROCm 5 or later?)");
  handle = lib;
  path = libraryPath;
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
