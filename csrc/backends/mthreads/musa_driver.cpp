#include "backends/mthreads/musa_driver.h"

#include "core/errors.h"
#include "core/library.h"
#include "core/singleton.h"

namespace ftp {
namespace {

// Where the driver's calls are looked up, in order: MUPTI's own dependencies (the libmusa it
// runs against), a libmusa already mapped, the whole process, and last a fresh load.
void* findDriver(void* muptiHandle, std::string& where) {
  if (hasSymbol(muptiHandle, "muGetExportTable")) {
    where = "libmupti's dependencies";
    return muptiHandle;
  }
  for (const char* name : {"libmusa.so", "libmusa.so.4", "libmusa.so.1"}) {
    if (void* lib = loadedLibrary(name)) {
      where = std::string(name) + " (already loaded)";
      return lib;
    }
  }
  if (hasSymbol(processScope(), "muGetExportTable")) {
    where = "the process";
    return processScope();
  }
  where = "libmusa.so";
  return tryOpenLibrary("libmusa.so");
}

}  // namespace

MusaDriver& MusaDriver::instance() {
  return leaked<MusaDriver>();
}

bool MusaDriver::load(void* muptiHandle, std::string& error) {
  if (ready_) return true;
  void* lib = findDriver(muptiHandle, where_);
  if (!lib) {
    error = "the MUSA driver (libmusa.so) is not loaded and cannot be loaded";
    return false;
  }
  try {
    // Optional ones: without them the device has no name, flush does not wait for the device,
    // or kernels get no occupancy / resource metrics.
    resolveSymbols(lib, where_, "mu",
                   {
                       {getExportTable_, "GetExportTable", Need::Required},
                       {deviceGetCount_, "DeviceGetCount", Need::Required},
                       {deviceGet_, "DeviceGet", Need::Required},
                       {deviceGetAttribute_, "DeviceGetAttribute", Need::Required},
                       {init_, "Init", Need::Optional},
                       {deviceGetName_, "DeviceGetName", Need::Optional},
                       {ctxPush_, "CtxPushCurrent", Need::Optional},
                       {ctxPop_, "CtxPopCurrent", Need::Optional},
                       {ctxSynchronize_, "CtxSynchronize", Need::Optional},
                       {ctxGetDevice_, "CtxGetDevice", Need::Optional},
                       {occupancy_, "OccupancyMaxActiveBlocksPerMultiprocessor", Need::Optional},
                       {funcGetAttribute_, "FuncGetAttribute", Need::Optional},
                   },
                   " (the MUSA driver)");
  } catch (const LibraryNotFound& missing) {
    error = missing.what();
    return false;
  }
  if (init_) init_(0);
  ready_ = true;
  return true;
}

int MusaDriver::deviceAttribute(int attribute, int device) {
  MUdevice dev = 0;
  int value = 0;
  if (!ready_ || deviceGet_(&dev, device) != 0) return 0;
  return deviceGetAttribute_(&value, attribute, dev) == 0 ? value : 0;
}

std::vector<MusaDeviceInfo> MusaDriver::devices() {
  std::vector<MusaDeviceInfo> out;
  int count = 0;
  if (!ready_ || deviceGetCount_(&count) != 0) return out;
  for (int i = 0; i < count; ++i) {
    MusaDeviceInfo info{i, "", 0, 0, 0, 0, 0, 0, 0, 0};
    MUdevice dev = 0;
    char name[256] = {0};
    if (deviceGetName_ && deviceGet_(&dev, i) == 0 && deviceGetName_(name, sizeof name, dev) == 0) info.name = name;
    info.major = deviceAttribute(MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, i);
    info.minor = deviceAttribute(MU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, i);
    info.numSms = deviceAttribute(MU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, i);
    info.clockRateKhz = deviceAttribute(MU_DEVICE_ATTRIBUTE_CLOCK_RATE, i);
    info.memoryClockRateKhz = deviceAttribute(MU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, i);
    info.busWidthBits = deviceAttribute(MU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, i);
    info.warpSize = deviceAttribute(MU_DEVICE_ATTRIBUTE_WARP_SIZE, i);
    info.maxThreadsPerSm = deviceAttribute(MU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, i);
    out.push_back(info);
  }
  return out;
}

void MusaDriver::synchronize(MUcontext context) {
  if (!ready_ || !context || !ctxPush_ || !ctxPop_ || !ctxSynchronize_) return;
  if (ctxPush_(context) != 0) return;
  ctxSynchronize_();
  MUcontext popped;
  ctxPop_(&popped);
}

int MusaDriver::currentDevice() {
  MUdevice dev = -1;
  if (!ready_ || !ctxGetDevice_ || ctxGetDevice_(&dev) != 0) return -1;
  return dev;
}

int MusaDriver::maxActiveBlocksPerSm(MUfunction f, int blockSize, size_t dynamicSharedMemory) {
  int blocks = 0;
  if (!ready_ || !occupancy_ || occupancy_(&blocks, f, blockSize, dynamicSharedMemory) != 0) return 0;
  return blocks;
}

int MusaDriver::functionAttribute(int attribute, MUfunction f) {
  int value = 0;
  if (!ready_ || !funcGetAttribute_ || funcGetAttribute_(&value, attribute, f) != 0) return 0;
  return value;
}

}  // namespace ftp
