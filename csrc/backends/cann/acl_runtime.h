// The few Ascend runtime (libascendcl) calls the cann backend makes: waiting for the device at
// flush and naming the devices for the tree's device_info. Only a copy the process already
// holds is used (torch_npu / triton-ascend load it); without one, flush relies on MSPTI's own
// flush and device_info is empty.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ftp {

struct NpuDeviceInfo {
  int index;
  std::string socName;
};

class AclRuntime {
 public:
  static AclRuntime& instance();
  // Looks in `msptiHandle`'s dependencies, then in a loaded libascendcl, then the process.
  bool find(void* msptiHandle);
  void synchronize();
  std::vector<NpuDeviceInfo> devices();

 private:
  using SyncFn = int (*)();
  using CountFn = int (*)(uint32_t*);
  using SocFn = const char* (*)();
  SyncFn synchronize_ = nullptr;
  CountFn deviceCount_ = nullptr;
  SocFn socName_ = nullptr;
};

}  // namespace ftp
