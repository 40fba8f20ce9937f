// The device timer ring on a CUDA device, through the dlopen'd driver API only (no CUPTI, no
// runtime): the ring's device memory and pinned mirror, a copy stream, events, and the clock
// probe that maps %globaltimer onto the host's monotonic clock.
#pragma once
#include <cuda.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/device_timer/timer_ring.h"

namespace ftp {

// One clock probe: the offset (device - host monotonic, ns) and its uncertainty (half the
// narrowest bracket of two device reads around one read of the host clock).
struct ClockProbe {
  int64_t offsetNs = 0;
  int64_t uncertaintyNs = 0;
};

struct CudaTimerApi;  // the driver function table (cuda_ring_device.cpp)

class CudaRingDevice : public RingDevice {
 public:
  // Allocates the ring for `slots` launches on the calling thread's current device (device 0's
  // primary context when none is current). Throws std::runtime_error naming the failed call.
  explicit CudaRingDevice(uint32_t slots);
  ~CudaRingDevice() override;

  uint64_t deviceBase() override { return base_; }
  const uint8_t* hostMirror() override { return mirror_; }
  Where onRingDevice() override;
  // Makes the ring's (primary) context current on this thread: what Triton's launcher does
  // for a thread without one, done before the allocator answers.
  void makeCurrent();
  bool capturing(uint64_t stream) override;
  void waitForStreams(std::vector<uint64_t>& streams) override;
  void* copyAndZero(uint32_t first, uint32_t count) override;
  void waitFence(void* fence) override;

  // Reads the device clock and the host clock against each other (a short kernel, one sync).
  ClockProbe probeClock();
  // CLOCK_REALTIME - CLOCK_MONOTONIC read on the host (the narrowest of a few brackets): the
  // global timer counts ns of the host's real-time clock, so this maps its stamps.
  static ClockProbe realtimeOffset();
  int deviceOrdinal() const { return ordinal_; }

 private:
  void check(CUresult result, const char* what);
  CUevent takeEvent();

  const CudaTimerApi& api_;
  CUcontext ctx_ = nullptr;
  CUdevice device_ = 0;
  int ordinal_ = 0;
  uint64_t planeBytes_ = 0;
  CUdeviceptr base_ = 0;
  uint8_t* mirror_ = nullptr;
  CUstream copy_ = nullptr;
  std::mutex eventsMutex_;
  std::vector<CUevent> freeEvents_;
  std::unordered_map<uint64_t, CUevent> streamEvents_;
  CUmodule probeModule_ = nullptr;
  CUfunction probe_ = nullptr;
};

}  // namespace ftp
