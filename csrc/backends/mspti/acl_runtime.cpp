#include "backends/mspti/acl_runtime.h"

#include <dlfcn.h>

#include <cstdint>

#include "core/library.h"

namespace ftp {

AclRuntime& AclRuntime::instance() {
  static AclRuntime* runtime = new AclRuntime();
  return *runtime;
}

bool AclRuntime::find(void* msptiHandle) {
  if (synchronize_) return true;
  void* places[] = {msptiHandle, dlopen("libascendcl.so", RTLD_NOW | RTLD_NOLOAD),
                    dlopen("libacl_rt.so", RTLD_NOW | RTLD_NOLOAD), RTLD_DEFAULT};
  for (void* lib : places) {
    if (!lib || !resolveSymbol(lib, "aclrtSynchronizeDevice", synchronize_)) continue;
    resolveSymbol(lib, "aclrtGetDeviceCount", deviceCount_);
    resolveSymbol(lib, "aclrtGetSocName", socName_);
    return true;
  }
  return false;
}

void AclRuntime::synchronize() {
  if (synchronize_) synchronize_();
}

std::vector<NpuDeviceInfo> AclRuntime::devices() {
  std::vector<NpuDeviceInfo> out;
  uint32_t count = 0;
  if (!deviceCount_ || deviceCount_(&count) != 0) return out;
  const char* soc = socName_ ? socName_() : nullptr;
  for (uint32_t i = 0; i < count; ++i) out.push_back({int(i), soc ? soc : ""});
  return out;
}

}  // namespace ftp
