// backend="device_timer" in CUDA graphs. A launch captured into a graph keeps the scratch pointer
// it got at capture for every replay, so it gets no ring slot but a tagged pointer (bit 3 set
// beside the ring's mark, bit 0; ring slots are 16-aligned) to a descriptor of its own in the
// ring's graph area:
//   header   kGraphTicketCounters pairs of {u64 entry tickets, u64 exit counts} (graph_tickets.h);
//   records  R replay records laid out as a ring of R slots: plane p of record q at row p x R + q
//            (16-byte rows), so a replay's lanes lie R rows apart and its stamps spread over the L2
//            as the ring's planes do; one decoder reads both.
// Each warp takes a ticket as it starts; ticket / (the grid's warps on its counter pair) is its
// replay r (the replays of one graph exec never run at once, so tickets are exact), and it stamps
// the row of its block's lane (block % kTimerLanes) of record r % R before counting its exit.
// Warp 0 of block l < kTimerLanes zeroes lane l's row of record (r + 1) % R, the next replay's
// (block 0's also the record's first row): records never need the host to zero them, and R - 1
// replays fit between two readbacks.
//
// Host: descriptors come from chunks allocated ahead (the first when the ring starts, the next at
// a readback that finds the last one half used; during a capture only when a chunk runs out).
// Readback (flush, finalize) orders itself after the replays with a device-wide sync (graph
// launches do not call the allocator: their streams are unknown), copies the used descriptors
// and delivers one record per replay since the last readback: under its replay's launch context
// when the replay was noted through torch (graph_replays.h), else under the capture context;
// more than R - 1 replays since then lose the oldest, counted.
#pragma once
#include <cstdint>
#include <mutex>
#include <vector>

#include "backends/device_timer/graph_replays.h"
#include "backends/device_timer/graph_tickets.h"
#include "backends/device_timer/timer_ring.h"
#include "data/records.h"

namespace ftp {

constexpr uint32_t kGraphHeaderBytes = kGraphTicketCounters * kGraphTicketBytes;
constexpr uint32_t kGraphRecordBytes = kTimerPlanes * kTimerSlotBytes;
constexpr uint64_t kGraphTag = 8;
constexpr uint32_t kGraphReplayStream = 0xFFFF;  // replays' own streams are not seen

struct GraphStats {
  uint64_t nodes = 0;       // captured launches given a descriptor
  uint64_t replays = 0;     // replay records delivered
  uint64_t lost = 0;        // replays overwritten before a readback (more than R - 1 since the last)
  uint64_t untimed = 0;     // replays read back without stamps
  uint64_t unknown = 0;     // records whose kernel id has no registered name
  uint64_t readbacks = 0;
  uint64_t skipped = 0;     // readbacks that could not sync the device (tried again at the next)
  uint64_t noRoom = 0;      // captured launches the full area could not take (not timed)
  uint64_t matched = 0;     // replay records filed under their replay's launch (graph_replays.h)
  uint64_t unmatched = 0;   // replay records filed under the capture context only
};

class GraphArea {
 public:
  // `records` (R): a power of two >= 2. Allocates the first chunk.
  GraphArea(RingDevice& device, uint32_t records, uint32_t nodesPerChunk, uint32_t maxChunks);
  uint64_t descriptorBytes() const { return kGraphHeaderBytes + uint64_t(records_) * kGraphRecordBytes; }
  uint32_t records() const { return records_; }

  // The tagged pointer for a launch captured now into `stream` under capture label `label` (0:
  // none, graph_replays.h), and its node index; 0 when the area is full.
  uint64_t claim(uint64_t stream, uint32_t label, uint32_t& index);
  // A replay of the graph captured under `label`, launched now on ring stream `stream`.
  void noteReplay(uint32_t label, uint16_t stream, uint64_t launchNs) { replays_.noteReplay(label, stream, launchNs); }
  uint32_t graphNodes(uint32_t label) { return replays_.nodes(label); }
  // What replays of node `index` carry: their correlation id and their graph node id (a range
  // clear of the ring's correlations and of CUPTI's graph node ids).
  static uint32_t correlationOf(uint32_t index) { return 0xE0000000u | (index & 0x1FFFFFFFu); }
  static uint64_t nodeKeyOf(uint32_t index) { return 0xFD71000000000000ull | index; }

  // Delivers the replays since the last readback of every node (waits for the device). Skipped
  // (counted) while a capture we took launches from is still open: a device-wide sync would
  // end it with an error.
  void readBack(const ClockMap& clock, uint32_t deviceId);
  GraphStats stats();

 private:
  struct Chunk {
    uint64_t base;
    uint32_t used;
  };
  bool growLocked();
  bool captureOpenLocked();
  void readNodeLocked(uint32_t index, const uint8_t* descriptor, const ClockMap& clock, uint32_t deviceId);
  void deliver(uint32_t index, uint64_t ordinal, uint64_t done, DeviceRecord& r);
  void settleLocked();

  RingDevice& device_;
  const uint32_t records_, perChunk_, maxChunks_;
  std::mutex mutex_;
  std::vector<Chunk> chunks_;
  std::vector<uint64_t> read_;  // per node: replays delivered or lost so far
  std::vector<uint32_t> labels_;  // per node: its capture label (0: none)
  GraphReplays replays_;
  std::vector<uint8_t> host_;   // readback buffer
  std::vector<uint64_t> capturing_;  // streams seen capturing, until seen done
  GraphStats stats_;
};

}  // namespace ftp
