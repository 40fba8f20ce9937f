// How a graph-captured launch's replays are numbered on the device (the stamps' tagged path,
// ptx_stamps.py) and read back on the host (graph_area.cpp). Every replay reuses one descriptor,
// so each block leader takes an entry ticket and each warp an exit ticket, and ticket / tickets
// per replay is the replay's index. The tickets are spread over kTimerLanes counter pairs by
// block: block b (its linear index in the grid) takes them on lane b % kTimerLanes, and stamps
// that lane's row of the replay's record. With one pair of counters for every block, a
// many-block kernel's atomics queued on two addresses, one after another, and the kernel read
// several times its unstamped time (docs/reference/device-timer.md, CUDA graphs).
#pragma once
#include <cstdint>

#include "backends/device_timer/timer_ring.h"

namespace ftp {

// The header of a descriptor: per lane {u64 entry tickets, u64 exit tickets}.
constexpr uint32_t kGraphTicketBytes = 16;

inline uint32_t ticketLane(uint64_t block) { return uint32_t(block % kTimerLanes); }

// The blocks of a grid of `blocks` that take their tickets on `lane`.
inline uint64_t laneBlocks(uint64_t blocks, uint32_t lane) {
  return lane < blocks ? (blocks - 1 - lane) / kTimerLanes + 1 : 0;
}

inline uint64_t warpsPerBlock(uint64_t threads) { return (threads + 31) / 32; }

}  // namespace ftp
