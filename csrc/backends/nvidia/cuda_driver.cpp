#include "backends/nvidia/cuda_driver.h"

#include <dlfcn.h>

#include <type_traits>

namespace ftp {

CudaDriver& CudaDriver::instance() {
  static CudaDriver* driver = new CudaDriver();
  return *driver;
}

bool CudaDriver::load(std::string& error) {
  if (handle_) return true;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char* why = dlerror();
    error = std::string("the CUDA driver (libcuda.so.1) cannot be loaded: ") + (why ? why : "not found");
    return false;
  }
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::decay_t<decltype(fn)>>(dlsym(lib, name));
    return fn != nullptr;
  };
  bool ok = resolve(init_, "cuInit") && resolve(driverGetVersion_, "cuDriverGetVersion") &&
            resolve(deviceGetCount_, "cuDeviceGetCount") && resolve(deviceGet_, "cuDeviceGet") &&
            resolve(deviceGetAttribute_, "cuDeviceGetAttribute") &&
            resolve(deviceGetName_, "cuDeviceGetName") && resolve(ctxPush_, "cuCtxPushCurrent_v2") &&
            resolve(ctxPop_, "cuCtxPopCurrent_v2") && resolve(ctxSynchronize_, "cuCtxSynchronize");
  if (!ok) {
    error = "libcuda.so.1 lacks a driver function the profiler needs";
    return false;
  }
  if (init_(0) != CUDA_SUCCESS) {
    error = "cuInit failed: no usable CUDA device";
    return false;
  }
  handle_ = lib;
  return true;
}

int CudaDriver::driverVersion() {
  int version = 0;
  if (handle_) driverGetVersion_(&version);
  return version;
}

std::vector<CudaDeviceInfo> CudaDriver::devices() {
  std::vector<CudaDeviceInfo> out;
  int count = 0;
  if (!handle_ || deviceGetCount_(&count) != CUDA_SUCCESS) return out;
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    if (deviceGet_(&dev, i) != CUDA_SUCCESS) continue;
    CudaDeviceInfo info{i, "", 0, 0, 0, 0, 0, 0};
    char name[256] = {0};
    if (deviceGetName_(name, sizeof name, dev) == CUDA_SUCCESS) info.name = name;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      deviceGetAttribute_(&v, a, dev);
      return v;
    };
    info.major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    info.minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    info.numSms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info.clockRateKhz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    info.memoryClockRateKhz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    info.busWidthBits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    out.push_back(info);
  }
  return out;
}

void CudaDriver::synchronize(CUcontext context) {
  if (!handle_ || !context) return;
  if (ctxPush_(context) != CUDA_SUCCESS) return;
  ctxSynchronize_();
  CUcontext popped;
  ctxPop_(&popped);
}

}  // namespace ftp
