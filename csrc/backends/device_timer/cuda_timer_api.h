// The CUDA driver functions the device timer uses, resolved once from the process's libcuda
// (dlopen'd: nothing is linked), and a scope guard that makes a context current for one call.
#pragma once
#include <cuda.h>

namespace ftp {

struct CudaTimerApi {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*getErrorString)(CUresult, const char**) = nullptr;
  CUresult (*ctxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*ctxPushCurrent)(CUcontext) = nullptr;
  CUresult (*ctxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*ctxGetDevice)(CUdevice*) = nullptr;
  CUresult (*deviceGet)(CUdevice*, int) = nullptr;
  CUresult (*primaryRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primaryRelease)(CUdevice) = nullptr;
  CUresult (*memAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*memFree)(CUdeviceptr) = nullptr;
  CUresult (*memHostAlloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*memFreeHost)(void*) = nullptr;
  CUresult (*memHostGetDevicePointer)(CUdeviceptr*, void*, unsigned) = nullptr;
  CUresult (*memsetD32)(CUdeviceptr, unsigned, size_t) = nullptr;
  CUresult (*memsetD2D32Async)(CUdeviceptr, size_t, unsigned, size_t, size_t, CUstream) = nullptr;
  CUresult (*memcpy2DAsync)(const CUDA_MEMCPY2D*, CUstream) = nullptr;
  CUresult (*memcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*memsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream) = nullptr;
  CUresult (*ctxSynchronize)() = nullptr;
  CUresult (*exchangeCaptureMode)(CUstreamCaptureMode*) = nullptr;
  CUresult (*streamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*streamDestroy)(CUstream) = nullptr;
  CUresult (*streamSynchronize)(CUstream) = nullptr;
  CUresult (*streamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*streamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*eventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*eventDestroy)(CUevent) = nullptr;
  CUresult (*eventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*eventSynchronize)(CUevent) = nullptr;
  CUresult (*eventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*moduleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*moduleUnload)(CUmodule) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void**, void**) = nullptr;
};

// The table; throws LibraryNotFound naming a missing function.
const CudaTimerApi& timerApi();

// Makes the ring's context current on this thread for the scope of one call.
class Current {
 public:
  Current(const CudaTimerApi& api, CUcontext ctx) : api_(api) { api_.ctxPushCurrent(ctx); }
  ~Current() {
    CUcontext popped;
    api_.ctxPopCurrent(&popped);
  }

 private:
  const CudaTimerApi& api_;
};

}  // namespace ftp
