// Timing events for the event-timed launches (event_launches.h) through the dlopen'd driver: in
// the ring's context, created with default flags (timing on; a wait spins, so an anchor's
// bracket stays short), anchored on a stream of their own (never the ring's copy stream, whose
// readbacks wait for the launch streams: an anchor must not wait for the program's work).
#include <stdexcept>

#include "backends/device_timer/cuda_ring_device.h"
#include "backends/device_timer/cuda_timer_api.h"
#include "backends/device_timer/event_launches.h"
#include "core/clock.h"

namespace ftp {

class CudaEventDevice : public EventDevice {
 public:
  explicit CudaEventDevice(CudaRingDevice& ring) : ring_(ring), api_(ring.api_) {
    Current scope(api_, ring_.ctx_);
    ring_.check(api_.streamCreate(&anchors_, CU_STREAM_NON_BLOCKING), "cuStreamCreate (event anchors)");
  }
  ~CudaEventDevice() override {
    Current scope(api_, ring_.ctx_);
    api_.streamSynchronize(anchors_);
    api_.streamDestroy(anchors_);
  }

  RingDevice::Where onDevice() override { return ring_.onRingDevice(); }
  bool capturing(uint64_t stream) override { return ring_.capturing(stream); }

  uint64_t create() override {
    Current scope(api_, ring_.ctx_);
    CUevent e = nullptr;
    return api_.eventCreate(&e, CU_EVENT_DEFAULT) == CUDA_SUCCESS ? reinterpret_cast<uint64_t>(e) : 0;
  }
  void destroy(uint64_t event) override {
    Current scope(api_, ring_.ctx_);
    api_.eventDestroy(reinterpret_cast<CUevent>(event));
  }
  // On the launching thread, whose current context is the ring's (checked before): no push.
  bool record(uint64_t event, uint64_t stream) override {
    return api_.eventRecord(reinterpret_cast<CUevent>(event), reinterpret_cast<CUstream>(stream)) == CUDA_SUCCESS;
  }
  bool wait(uint64_t event) override {
    Current scope(api_, ring_.ctx_);
    return api_.eventSynchronize(reinterpret_cast<CUevent>(event)) == CUDA_SUCCESS;
  }
  bool elapsedNs(uint64_t from, uint64_t to, int64_t& ns) override {
    Current scope(api_, ring_.ctx_);
    float ms = 0;
    if (api_.eventElapsedTime(&ms, reinterpret_cast<CUevent>(from), reinterpret_cast<CUevent>(to)) != CUDA_SUCCESS)
      return false;
    ns = int64_t(double(ms) * 1e6 + (ms < 0 ? -0.5 : 0.5));
    return true;
  }
  bool anchor(uint64_t event, uint64_t& hostNs, uint64_t& uncertaintyNs) override {
    Current scope(api_, ring_.ctx_);
    const uint64_t before = monotonicNs();
    if (api_.eventRecord(reinterpret_cast<CUevent>(event), anchors_) != CUDA_SUCCESS) return false;
    if (api_.eventSynchronize(reinterpret_cast<CUevent>(event)) != CUDA_SUCCESS) return false;
    const uint64_t after = monotonicNs();
    hostNs = before + (after - before) / 2;
    uncertaintyNs = (after - before) / 2;
    return true;
  }

 private:
  CudaRingDevice& ring_;
  const CudaTimerApi& api_;
  CUstream anchors_ = nullptr;
};

std::unique_ptr<EventDevice> CudaRingDevice::eventDevice() { return std::make_unique<CudaEventDevice>(*this); }

}  // namespace ftp
