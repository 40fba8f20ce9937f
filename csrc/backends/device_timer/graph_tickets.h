// How a graph-captured launch's replays are numbered on the device (the stamps' graph path,
// ptx_graph_stamps.py) and read back on the host (graph_area.cpp). Every replay reuses one
// descriptor, so each warp takes an entry ticket as it starts and counts its exit once it has
// stamped, on counter pair (its linear index among the grid's warps) % kGraphTicketCounters, and
// ticket / (the grid's warps on that pair) is the warp's replay. The entry ticket is answered
// while the warp runs and read at its exit, and the exit count wants no answer, so no warp waits
// for a round trip to memory; spread over a thousand pairs, the atomics of a many-block kernel
// do not queue on a few addresses, as they did on 32 (docs/reference/device-timer.md, CUDA graphs).
#pragma once
#include <cstdint>

namespace ftp {

// A descriptor's header: kGraphTicketCounters pairs of {u64 entry tickets, u64 exit counts}.
constexpr uint32_t kGraphTicketBytes = 16;
constexpr uint32_t kGraphTicketCounters = 1024;

// The warps of a grid of `warps` that take their tickets on pair `counter`: a replay takes that
// many entry tickets and as many exit counts there.
inline uint64_t counterWarps(uint64_t warps, uint32_t counter) {
  return counter < warps ? (warps - 1 - counter) / kGraphTicketCounters + 1 : 0;
}

inline uint64_t warpsPerBlock(uint64_t threads) { return (threads + 31) / 32; }

}  // namespace ftp
