// The one decoder of a stamped launch's record, shared by the ring's slots and the replay
// records of graph nodes: plane 0 {kernel id, grid x, grid y | grid z << 16, block x}, then
// kTimerLanes lanes of {~start, end}, `planeStride` bytes apart (a plane of the ring, or one
// 16-byte row of a graph replay record). Also the kernel names the ids stand for.
#pragma once
#include <cstdint>

#include "data/records.h"

namespace ftp {

struct ClockMap;

struct SlotDecode {
  uint32_t delivered = 0;  // records built
  uint32_t untimed = 0;    // records without stamps (their launch did not run)
  uint32_t unknown = 0;    // kernel ids with no registered name
};

// Fills `out` (kind, device type, times on the host clock, name, geometry) from the record at
// `plane0`; false when it carries no stamps. Counts into `counts`.
bool decodeSlot(const uint8_t* plane0, uint64_t planeStride, const ClockMap& clock, DeviceRecord& out,
                SlotDecode& counts);

}  // namespace ftp
