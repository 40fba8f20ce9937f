#include "backends/nvidia/cuda_driver.h"

#include "core/errors.h"
#include "core/library.h"

namespace ftp {

namespace {
const char* const kLibcuda = "libcuda.so.1";
}

CudaDriver& CudaDriver::instance() { return leaked<CudaDriver>(); }

bool CudaDriver::resolve(void* library) {
  if (resolved_.load(std::memory_order_acquire)) return true;
  Functions fn;
  resolveSymbols(library, kLibcuda, "cu",
                 {
                     {fn.init, "Init", Need::Required},
                     {fn.driverGetVersion, "DriverGetVersion", Need::Required},
                     {fn.deviceGetCount, "DeviceGetCount", Need::Required},
                     {fn.deviceGet, "DeviceGet", Need::Required},
                     {fn.deviceGetAttribute, "DeviceGetAttribute", Need::Required},
                     {fn.deviceGetName, "DeviceGetName", Need::Required},
                     {fn.ctxPushCurrent, "CtxPushCurrent_v2", Need::Required},
                     {fn.ctxPopCurrent, "CtxPopCurrent_v2", Need::Required},
                     {fn.ctxSynchronize, "CtxSynchronize", Need::Required},
                     {fn.ctxGetCurrent, "CtxGetCurrent", Need::Required},
                     {fn.ctxGetDevice, "CtxGetDevice", Need::Required},
                 });
  fn_ = fn;
  resolved_.store(true, std::memory_order_release);
  return true;
}

void CudaDriver::load() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (initialized_.load(std::memory_order_acquire)) return;
  resolve(openLibrary(kLibcuda));
  if (fn_.init(0) != CUDA_SUCCESS) throw Unsupported("cuInit failed: no usable CUDA device");
  initialized_.store(true, std::memory_order_release);
}

bool CudaDriver::available() {
  try {
    load();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool CudaDriver::attach() {
  if (resolved_.load(std::memory_order_acquire)) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  void* library = loadedLibrary(kLibcuda);
  if (!library) return false;
  try {
    return resolve(library);
  } catch (const LibraryNotFound&) {
    return false;  // called from vendor callbacks: never throw there
  }
}

int CudaDriver::driverVersion() {
  int version = 0;
  if (initialized_.load(std::memory_order_acquire)) fn_.driverGetVersion(&version);
  return version;
}

std::vector<CudaDeviceInfo> CudaDriver::devices() {
  std::vector<CudaDeviceInfo> out;
  int count = 0;
  if (!initialized_.load(std::memory_order_acquire) || fn_.deviceGetCount(&count) != CUDA_SUCCESS) return out;
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    if (fn_.deviceGet(&dev, i) != CUDA_SUCCESS) continue;
    CudaDeviceInfo info{i, "", 0, 0, 0, 0, 0, 0};
    char name[256] = {0};
    if (fn_.deviceGetName(name, sizeof name, dev) == CUDA_SUCCESS) info.name = name;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      fn_.deviceGetAttribute(&v, a, dev);
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
  if (!initialized_.load(std::memory_order_acquire) || !context) return;
  if (fn_.ctxPushCurrent(context) != CUDA_SUCCESS) return;
  fn_.ctxSynchronize();
  CUcontext popped;
  fn_.ctxPopCurrent(&popped);
}

CUcontext CudaDriver::currentContext() {
  CUcontext context = nullptr;
  if (!attach() || fn_.ctxGetCurrent(&context) != CUDA_SUCCESS) return nullptr;
  return context;
}

int CudaDriver::currentDevice() {
  CUdevice device = 0;
  if (!attach() || fn_.ctxGetDevice(&device) != CUDA_SUCCESS) return 0;
  return int(device);
}

void CudaDriver::synchronizeCurrent() {
  if (attach()) fn_.ctxSynchronize();
}

}  // namespace ftp
