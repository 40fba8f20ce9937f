// Which Perfetto track each device event of a trace goes on. One track per (device, stream);
// kernels and copies replayed from a CUDA graph get a track per (device, stream, graph): the
// nodes of one graph run concurrently on branches of their own, yet CUPTI reports them on the
// stream the graph was launched into, so on the stream's track they would overlap each other
// and the stream's other work. A graph is known by its node ids: nodes that ran under one
// graph launch (one correlation id) belong to one graph, and replays of it share node ids.
// Perfetto requires the slices of one track to nest, so events that overlap on such a track
// go to lanes: lane 0 is the track itself, lane k an extra track beside it, as many as the
// deepest overlap needs.
#pragma once
#include <cstdint>
#include <vector>

#include "data/trace.h"

namespace ftp {

struct DeviceTrack {
  uint32_t device;
  uint32_t stream;
  uint32_t graph;  // 0: not a graph replay; else graphs numbered from 1 in order of appearance
  uint32_t lane;   // 0: the track itself; k: the k-th extra track for overlapping events
};

class DeviceTrackPlan {
 public:
  explicit DeviceTrackPlan(const ChunkedVector<DeviceEvent>& events);
  // Sorted by (device, stream, graph, lane).
  const std::vector<DeviceTrack>& tracks() const { return tracks_; }
  // The index into tracks() of event `i`.
  uint32_t trackOf(size_t i) const { return trackOf_[i]; }

 private:
  std::vector<DeviceTrack> tracks_;
  std::vector<uint32_t> trackOf_;
};

}  // namespace ftp
