// The driver shim: every CUDA driver call the profiler itself makes goes through here, through
// one dlopen'd libcuda (device properties, the driver version, synchronising contexts before a
// flush, the launching thread's current context).
#pragma once
#include <cuda.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "core/singleton.h"

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

  // Loads libcuda and initialises it (cuInit) once. Throws LibraryNotFound where there is no
  // driver, Unsupported where cuInit fails (no usable device).
  void load();
  // load(), answering false instead of throwing.
  bool available();
  // Needs load(); empty / 0 / no-op before it.
  std::vector<CudaDeviceInfo> devices();
  int driverVersion();
  // Waits for all work queued in `context` (a CUcontext seen at a launch).
  void synchronize(CUcontext context);

  // Calls about the calling thread's current context, made from vendor callbacks. They use the
  // libcuda the process already holds and never load or initialise one: without it there is no
  // context (host-side tests with stand-in libraries), and the answer is "none".
  CUcontext currentContext();
  int currentDevice();        // 0 when there is none
  void synchronizeCurrent();  // cuCtxSynchronize on the current context, if any

 private:
  friend CudaDriver& leaked<CudaDriver>();
  CudaDriver() = default;
  // Resolves the table from `library` (under mutex_); false when a function is missing.
  bool resolve(void* library);
  // The table, resolved from an already-loaded libcuda if it is not yet; false without one.
  bool attach();

  struct Functions {
    CUresult (*init)(unsigned) = nullptr;
    CUresult (*driverGetVersion)(int*) = nullptr;
    CUresult (*deviceGetCount)(int*) = nullptr;
    CUresult (*deviceGet)(CUdevice*, int) = nullptr;
    CUresult (*deviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
    CUresult (*deviceGetName)(char*, int, CUdevice) = nullptr;
    CUresult (*ctxPushCurrent)(CUcontext) = nullptr;
    CUresult (*ctxPopCurrent)(CUcontext*) = nullptr;
    CUresult (*ctxSynchronize)() = nullptr;
    CUresult (*ctxGetCurrent)(CUcontext*) = nullptr;
    CUresult (*ctxGetDevice)(CUdevice*) = nullptr;
  };

  std::mutex mutex_;
  Functions fn_;
  std::atomic<bool> resolved_{false};     // fn_ is complete (read without the lock)
  std::atomic<bool> initialized_{false};  // cuInit succeeded
};

}  // namespace ftp
