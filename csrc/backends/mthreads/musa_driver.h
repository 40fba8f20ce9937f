// The few libmusa (MUSA driver) calls the mthreads backend makes: device descriptions for the
// tree's device_info (peak memory bandwidth = memory clock x bus width), context sync at
// flush, and the occupancy and function-attribute queries behind the per-kernel metrics.
// Resolved from the copy the process already holds (MUPTI's own dependency first), never
// loaded anew when a copy is there, never closed.
#pragma once
#include "core/singleton.h"
#include <string>
#include <vector>

#include "backends/mthreads/mupti_types.h"

namespace ftp {

struct MusaDeviceInfo {
  int index;
  std::string name;
  int major, minor, numSms, clockRateKhz, memoryClockRateKhz, busWidthBits, warpSize, maxThreadsPerSm;
};

class MusaDriver {
 public:
  static MusaDriver& instance();
  // Resolves the calls, looking in `muptiHandle`'s dependencies first (may be null). False
  // with `error` set when libmusa or one of its required calls is missing.
  bool load(void* muptiHandle, std::string& error);
  bool loaded() const { return ready_; }
  const std::string& where() const { return where_; }
  std::vector<MusaDeviceInfo> devices();
  void synchronize(MUcontext context);
  // The device of the calling thread's current context; -1 when unknown.
  int currentDevice();
  int deviceAttribute(int attribute, int device);
  // 0 when the call is missing or fails.
  int maxActiveBlocksPerSm(MUfunction f, int blockSize, size_t dynamicSharedMemory);
  int functionAttribute(int attribute, MUfunction f);

  using InitFn = MUresult (*)(unsigned int);
  using CountFn = MUresult (*)(int*);
  using DeviceGetFn = MUresult (*)(MUdevice*, int);
  using NameFn = MUresult (*)(char*, int, MUdevice);
  using AttributeFn = MUresult (*)(int*, int, MUdevice);
  using CtxFn = MUresult (*)(MUcontext);
  using CtxPopFn = MUresult (*)(MUcontext*);
  using CtxSyncFn = MUresult (*)();
  using CtxDeviceFn = MUresult (*)(MUdevice*);
  using OccupancyFn = MUresult (*)(int*, MUfunction, int, size_t);
  using FuncAttributeFn = MUresult (*)(int*, int, MUfunction);
  using ExportTableFn = MUresult (*)(const void**, const void*);

 private:
  friend MusaDriver& leaked<MusaDriver>();
  MusaDriver() = default;
  bool ready_ = false;
  std::string where_;
  InitFn init_ = nullptr;
  CountFn deviceGetCount_ = nullptr;
  DeviceGetFn deviceGet_ = nullptr;
  NameFn deviceGetName_ = nullptr;
  AttributeFn deviceGetAttribute_ = nullptr;
  CtxFn ctxPush_ = nullptr;
  CtxPopFn ctxPop_ = nullptr;
  CtxSyncFn ctxSynchronize_ = nullptr;
  CtxDeviceFn ctxGetDevice_ = nullptr;
  OccupancyFn occupancy_ = nullptr;
  FuncAttributeFn funcGetAttribute_ = nullptr;
  ExportTableFn getExportTable_ = nullptr;
};

}  // namespace ftp
