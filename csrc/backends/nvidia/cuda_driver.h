// The few CUDA driver calls the profiler itself makes (device properties, synchronising the
// contexts it saw before a final flush), through a dlopen'd libcuda.
#pragma once
#include <cuda.h>

#include <map>
#include <string>
#include <vector>

namespace ftp {

struct CudaDeviceInfo {
  int index;
  std::string name;
  int major, minor;
  int numSms;
  int clockRateKhz;
  int memoryClockRateKhz;
  int busWidthBits;
};

class CudaDriver {
 public:
  static CudaDriver& instance();
  // Loads libcuda once; false (with `error`) where there is no driver.
  bool load(std::string& error);
  std::vector<CudaDeviceInfo> devices();
  int driverVersion();
  // Waits for all work queued in `context` (a CUcontext seen at a launch).
  void synchronize(CUcontext context);

 private:
  using Init = CUresult (*)(unsigned);
  using DriverGetVersion = CUresult (*)(int*);
  using DeviceGetCount = CUresult (*)(int*);
  using DeviceGet = CUresult (*)(CUdevice*, int);
  using DeviceGetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  using DeviceGetName = CUresult (*)(char*, int, CUdevice);
  using CtxPush = CUresult (*)(CUcontext);
  using CtxPop = CUresult (*)(CUcontext*);
  using CtxSynchronize = CUresult (*)();

  void* handle_ = nullptr;
  Init init_ = nullptr;
  DriverGetVersion driverGetVersion_ = nullptr;
  DeviceGetCount deviceGetCount_ = nullptr;
  DeviceGet deviceGet_ = nullptr;
  DeviceGetAttribute deviceGetAttribute_ = nullptr;
  DeviceGetName deviceGetName_ = nullptr;
  CtxPush ctxPush_ = nullptr;
  CtxPop ctxPop_ = nullptr;
  CtxSynchronize ctxSynchronize_ = nullptr;
};

}  // namespace ftp
