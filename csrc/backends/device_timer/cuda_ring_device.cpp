#include "backends/device_timer/cuda_ring_device.h"

#include "backends/device_timer/cuda_timer_api.h"

#include <atomic>
#include <stdexcept>
#include <thread>

#include "core/clock.h"
#include "core/library.h"

namespace ftp {

const CudaTimerApi& timerApi() {
  static const CudaTimerApi api = [] {
    const std::string path = "libcuda.so.1";
    CudaTimerApi a;
    resolveSymbols(openLibrary(path), path, "cu",
                   {{a.init, "Init", Need::Required},
                    {a.getErrorString, "GetErrorString", Need::Required},
                    {a.ctxGetCurrent, "CtxGetCurrent", Need::Required},
                    {a.ctxPushCurrent, "CtxPushCurrent_v2", Need::Required},
                    {a.ctxPopCurrent, "CtxPopCurrent_v2", Need::Required},
                    {a.ctxSetCurrent, "CtxSetCurrent", Need::Required},
                    {a.ctxGetDevice, "CtxGetDevice", Need::Required},
                    {a.deviceGet, "DeviceGet", Need::Required},
                    {a.primaryRetain, "DevicePrimaryCtxRetain", Need::Required},
                    {a.primaryRelease, "DevicePrimaryCtxRelease_v2", Need::Required},
                    {a.memAlloc, "MemAlloc_v2", Need::Required},
                    {a.memFree, "MemFree_v2", Need::Required},
                    {a.memHostAlloc, "MemHostAlloc", Need::Required},
                    {a.memFreeHost, "MemFreeHost", Need::Required},
                    {a.memHostGetDevicePointer, "MemHostGetDevicePointer_v2", Need::Required},
                    {a.memsetD32, "MemsetD32_v2", Need::Required},
                    {a.memsetD2D32Async, "MemsetD2D32Async", Need::Required},
                    {a.memcpy2DAsync, "Memcpy2DAsync_v2", Need::Required},
                    {a.memcpyDtoHAsync, "MemcpyDtoHAsync_v2", Need::Required},
                    {a.memsetD32Async, "MemsetD32Async", Need::Required},
                    {a.ctxSynchronize, "CtxSynchronize", Need::Required},
                    {a.exchangeCaptureMode, "ThreadExchangeStreamCaptureMode", Need::Required},
                    {a.streamCreate, "StreamCreate", Need::Required},
                    {a.streamDestroy, "StreamDestroy_v2", Need::Required},
                    {a.streamSynchronize, "StreamSynchronize", Need::Required},
                    {a.streamIsCapturing, "StreamIsCapturing", Need::Required},
                    {a.streamWaitEvent, "StreamWaitEvent", Need::Required},
                    {a.eventCreate, "EventCreate", Need::Required},
                    {a.eventDestroy, "EventDestroy_v2", Need::Required},
                    {a.eventRecord, "EventRecord", Need::Required},
                    {a.eventSynchronize, "EventSynchronize", Need::Required},
                    {a.eventElapsedTime, "EventElapsedTime", Need::Required},
                    {a.moduleLoadData, "ModuleLoadData", Need::Required},
                    {a.moduleUnload, "ModuleUnload", Need::Required},
                    {a.moduleGetFunction, "ModuleGetFunction", Need::Required},
                    {a.launchKernel, "LaunchKernel", Need::Required}},
                   " (backend 'device_timer')");
    return a;
  }();
  return api;
}


void CudaRingDevice::check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  api_.getErrorString(result, &text);
  throw std::runtime_error(std::string("backend 'device_timer': ") + what + " failed: " + (text ? text : "?") +
                           " (error " + std::to_string(int(result)) + ")");
}

CudaRingDevice::CudaRingDevice(uint32_t slots) : api_(timerApi()) {
  check(api_.init(0), "cuInit");
  CUcontext current = nullptr;
  api_.ctxGetCurrent(&current);
  if (current) {
    check(api_.ctxGetDevice(&device_), "cuCtxGetDevice");
  } else {
    check(api_.deviceGet(&device_, 0), "cuDeviceGet");
  }
  ordinal_ = int(device_);
  check(api_.primaryRetain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
  Current scope(api_, ctx_);
  planeBytes_ = uint64_t(slots) * kTimerSlotBytes;
  const size_t bytes = planeBytes_ * kTimerPlanes;
  check(api_.memAlloc(&base_, bytes), "cuMemAlloc (the ring)");
  check(api_.memsetD32(base_, 0, bytes / 4), "cuMemsetD32");
  void* host = nullptr;
  check(api_.memHostAlloc(&host, bytes, 0), "cuMemHostAlloc (the ring's pinned mirror)");
  mirror_ = static_cast<uint8_t*>(host);
  check(api_.streamCreate(&copy_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  loadProbes();
}

CudaRingDevice::~CudaRingDevice() {
  Current scope(api_, ctx_);
  if (copy_) api_.streamSynchronize(copy_);
  for (CUevent e : freeEvents_) api_.eventDestroy(e);
  for (auto& [stream, e] : streamEvents_) api_.eventDestroy(e);
  if (probeModule_) api_.moduleUnload(probeModule_);
  if (probeHost_) api_.memFreeHost(probeHost_);
  if (copy_) api_.streamDestroy(copy_);
  if (mirror_) api_.memFreeHost(mirror_);
  if (base_) api_.memFree(base_);
  // The graph area is kept: graphs captured with its descriptors may still be replayed (their
  // stamps then write into memory nobody reads; it goes with the context).
  api_.primaryRelease(device_);
}

RingDevice::Where CudaRingDevice::onRingDevice() {
  CUcontext current = nullptr;
  if (api_.ctxGetCurrent(&current) != CUDA_SUCCESS) return kNo;
  return !current ? kNoContext : current == ctx_ ? kYes : kNo;
}

void CudaRingDevice::makeCurrent() { api_.ctxSetCurrent(ctx_); }

ClockProbe CudaRingDevice::realtimeOffset() {
  ClockProbe best{0, -1};
  for (int i = 0; i < 16; ++i) {
    const uint64_t before = monotonicNs(), real = realtimeNs(), after = monotonicNs();
    const int64_t half = int64_t(after - before) / 2;
    if (best.uncertaintyNs < 0 || half < best.uncertaintyNs)
      best = ClockProbe{int64_t(real) - int64_t(before + (after - before) / 2), half};
  }
  return best;
}

bool CudaRingDevice::capturing(uint64_t stream) {
  // The legacy default stream (handle 0, where torch's default stream launches) never captures:
  // CUDA refuses to begin a capture on it, so no launch on it is captured. Not asking spares the
  // commonest launch one driver call.
  if (stream == 0) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return api_.streamIsCapturing(reinterpret_cast<CUstream>(stream), &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

CUevent CudaRingDevice::takeEvent() {
  std::lock_guard<std::mutex> lock(eventsMutex_);
  if (!freeEvents_.empty()) {
    CUevent e = freeEvents_.back();
    freeEvents_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  // Blocking: the worker sleeps in cuEventSynchronize instead of spinning a core.
  check(api_.eventCreate(&e, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return e;
}

void CudaRingDevice::waitForStreams(std::vector<uint64_t>& streams) {
  Current scope(api_, ctx_);
  for (size_t i = 0; i < streams.size();) {
    CUevent& e = streamEvents_[streams[i]];
    if (!e) check(api_.eventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    // A wait takes the event's latest record: one event per stream, reused for every readback.
    if (api_.eventRecord(e, reinterpret_cast<CUstream>(streams[i])) != CUDA_SUCCESS) {
      streams.erase(streams.begin() + long(i));  // the stream is gone, and so is its work
      continue;
    }
    check(api_.streamWaitEvent(copy_, e, 0), "cuStreamWaitEvent");
    ++i;
  }
}

void* CudaRingDevice::copyAndZero(uint32_t first, uint32_t count) {
  Current scope(api_, ctx_);
  const uint64_t offset = uint64_t(first) * kTimerSlotBytes;
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = base_ + offset;
  copy.srcPitch = planeBytes_;
  copy.dstMemoryType = CU_MEMORYTYPE_HOST;
  copy.dstHost = mirror_ + offset;
  copy.dstPitch = planeBytes_;
  copy.WidthInBytes = uint64_t(count) * kTimerSlotBytes;
  copy.Height = kTimerPlanes;
  check(api_.memcpy2DAsync(&copy, copy_), "cuMemcpy2DAsync (ring readback)");
  check(api_.memsetD2D32Async(base_ + offset, planeBytes_, 0, uint64_t(count) * kTimerSlotBytes / 4, kTimerPlanes,
                              copy_),
        "cuMemsetD2D32Async (ring re-zero)");
  CUevent done = takeEvent();
  check(api_.eventRecord(done, copy_), "cuEventRecord");
  return done;
}

void CudaRingDevice::waitFence(void* fence) {
  CUevent e = static_cast<CUevent>(fence);
  {
    Current scope(api_, ctx_);
    api_.eventSynchronize(e);
  }
  std::lock_guard<std::mutex> lock(eventsMutex_);
  freeEvents_.push_back(e);
}

// This thread may make calls that a capture in global mode forbids (any thread's capture), for
// the scope of one call: allocating and zeroing a chunk of the graph area during a capture.
class RelaxedCapture {
 public:
  explicit RelaxedCapture(const CudaTimerApi& api) : api_(api) { api_.exchangeCaptureMode(&mode_); }
  ~RelaxedCapture() { api_.exchangeCaptureMode(&mode_); }

 private:
  const CudaTimerApi& api_;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

uint64_t CudaRingDevice::allocGraphChunk(uint64_t bytes) {
  Current scope(api_, ctx_);
  RelaxedCapture relaxed(api_);
  CUdeviceptr chunk = 0;
  if (api_.memAlloc(&chunk, bytes) != CUDA_SUCCESS) return 0;
  // Zeroed on the copy stream (never captured), waited for: replays come after this call.
  if (api_.memsetD32Async(chunk, 0, bytes / 4, copy_) != CUDA_SUCCESS || api_.streamSynchronize(copy_) != CUDA_SUCCESS) {
    api_.memFree(chunk);
    return 0;
  }
  return chunk;
}

bool CudaRingDevice::syncDevice() {
  Current scope(api_, ctx_);
  return api_.ctxSynchronize() == CUDA_SUCCESS;
}

void CudaRingDevice::readDevice(uint64_t address, void* host, uint64_t bytes) {
  Current scope(api_, ctx_);
  check(api_.memcpyDtoHAsync(host, CUdeviceptr(address), bytes, copy_), "cuMemcpyDtoHAsync (graph readback)");
  check(api_.streamSynchronize(copy_), "cuStreamSynchronize (graph readback)");
}

}  // namespace ftp
