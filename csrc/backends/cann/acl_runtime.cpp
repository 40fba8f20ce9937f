#include "backends/cann/acl_runtime.h"

#include <cstdint>

#include "core/errors.h"
#include "core/library.h"
#include "core/singleton.h"

namespace ftp {

AclRuntime& AclRuntime::instance() {
  return leaked<AclRuntime>();
}

bool AclRuntime::find(void* msptiHandle) {
  if (synchronize_) return true;
  void* places[] = {msptiHandle, loadedLibrary("libascendcl.so"), loadedLibrary("libacl_rt.so"), processScope()};
  for (void* lib : places) {
    if (!lib) continue;
    try {
      resolveSymbols(lib, "the ACL runtime", "aclrt",
                     {
                         {synchronize_, "SynchronizeDevice", Need::Required},
                         {deviceCount_, "GetDeviceCount", Need::Optional},
                         {socName_, "GetSocName", Need::Optional},
                     });
      return true;
    } catch (const LibraryNotFound&) {
      synchronize_ = nullptr;  // not in this place: look at the next
    }
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
