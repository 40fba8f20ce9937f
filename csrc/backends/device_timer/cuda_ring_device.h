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

// The offset device - host monotonic (ns) between two bounds: `upperNs` from the device reading
// the host's clock (a host value is read after it was written), `lowerNs` from the host reading
// the device's (likewise); offset = their midpoint, uncertainty = half their distance (negative
// distance: the bounds contradict each other, the clocks moved during the probe).
struct ClockProbe {
  int64_t offsetNs = 0;
  int64_t uncertaintyNs = 0;
  int64_t lowerNs = 0;
  int64_t upperNs = 0;
};

struct CudaTimerApi;  // the driver function table (cuda_ring_device.cpp)
class EventDevice;   // event_launches.h

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
  uint64_t allocGraphChunk(uint64_t bytes) override;
  // cuCtxSynchronize: fails (and is skipped) while another thread captures in global mode.
  bool syncDevice() override;
  void readDevice(uint64_t address, void* host, uint64_t bytes) override;

  // Reads the device clock and the host clock against each other, both ways (two short
  // kernels, host memory mapped write-combined so neither side reads a cached copy); clock_probe.cpp.
  ClockProbe probeClock();
  // CLOCK_REALTIME - CLOCK_MONOTONIC read on the host (the narrowest of a few brackets): the
  // global timer counts ns of the host's real-time clock, so this maps its stamps.
  static ClockProbe realtimeOffset();
  int deviceOrdinal() const { return ordinal_; }
  // Timing events in the ring's context, for launches the stamps cannot reach (cuda_event_device.cpp).
  std::unique_ptr<EventDevice> eventDevice();

 private:
  friend class CudaEventDevice;
  void check(CUresult result, const char* what);
  void loadProbes();
  int64_t upperBound();  // the device reads the host clock
  int64_t lowerBound();  // the host reads the device clock
  volatile uint64_t* probeWord(size_t offset);  // a word of the probe's mapped memory
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
  CUfunction probeRead_ = nullptr;  // the device reads the host's clock word
  CUfunction probeEmit_ = nullptr;  // the device writes its clock for the host to read
  void* probeHost_ = nullptr;       // pinned, mapped write-combined: the probe's words
  CUdeviceptr probeDevice_ = 0;     // the same memory as the device sees it
};

}  // namespace ftp
