// backend="device_timer": launches of kernels with kernel-side scopes. Those kernels use the
// profile scratch pointer for their scope buffers, so they take no ring slot; their device
// time comes from the global-timer stamps each block writes into its buffer's header (read at
// the scopes' drain). They get correlation ids of their own, next to the ring's, and reach the
// session layer as ring launches do: onLaunch on the launching thread, onRecord with the
// device timer's time source and clock mapping.
#pragma once
#include <cstdint>

#include "backends/device_timer/timer_ring.h"

namespace ftp {

// 0xD0000000 .. 0xDFFFFFFF: clear of the ring's (0xC0000000 .., timer_ring.cpp) and of graph
// nodes' (0xE0000000 .., graph_area.h).
constexpr uint32_t kScopedCorrelationBase = 0xD0000000u;
constexpr uint32_t kScopedCorrelationMask = 0x0FFFFFFFu;

// A launch on this thread (Triton's launch-exit hook: the launch's metadata, hook="triton",
// has been published): its correlation id, registered with the device timer's sessions.
uint32_t scopedLaunch(uint64_t launchNs);

struct ScopedTimes {
  uint32_t correlation;
  uint32_t name;  // interned kernel name
  uint64_t startStamp, endStamp;  // global timer (ns): earliest block start, latest block end
  int32_t grid[3], block[3];
  uint64_t stream;  // the launch's stream handle
};
// The launch's record, its stamps mapped with the ring's clock.
void scopedRecord(TimerRing& ring, const ScopedTimes& times);

}  // namespace ftp
