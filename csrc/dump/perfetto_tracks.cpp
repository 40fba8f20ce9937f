#include "dump/perfetto_tracks.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

namespace ftp {
namespace {

// Union-find over graph nodes: the nodes seen under one graph launch are one graph.
class GraphNodes {
 public:
  uint32_t indexOf(uint32_t node) {
    auto [it, fresh] = index_.emplace(node, static_cast<uint32_t>(parent_.size()));
    if (fresh) parent_.push_back(it->second);
    return it->second;
  }
  void unite(uint32_t a, uint32_t b) { parent_[find(a)] = find(b); }
  uint32_t find(uint32_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];  // path halving
    return i;
  }
  size_t size() const { return parent_.size(); }

 private:
  std::unordered_map<uint32_t, uint32_t> index_;
  std::vector<uint32_t> parent_;
};

// Per event, its graph's number (from 1, in order of appearance), 0 outside graphs; empty when
// no event came from a graph.
std::vector<uint32_t> graphNumbers(const ChunkedVector<DeviceEvent>& events) {
  std::vector<uint32_t> out;
  GraphNodes nodes;
  std::unordered_map<uint32_t, uint32_t> launchNode;  // graph launch (correlation) -> a node of it
  for (size_t i = 0; i < events.size(); ++i) {
    const DeviceEvent& e = events[i];
    if (!e.graphNode) continue;
    if (out.empty()) out.assign(events.size(), 0);
    const uint32_t node = nodes.indexOf(e.graphNode);
    auto [it, fresh] = launchNode.emplace(e.correlation, node);
    if (!fresh) nodes.unite(node, it->second);
    out[i] = node + 1;  // the node's index for now
  }
  if (out.empty()) return out;
  std::vector<uint32_t> numberOfRoot(nodes.size(), 0);
  uint32_t next = 1;
  for (uint32_t& g : out) {
    if (!g) continue;
    uint32_t& number = numberOfRoot[nodes.find(g - 1)];
    if (!number) number = next++;
    g = number;
  }
  return out;
}

// The last event of a lane; lanes sit in a min-heap by (end, index).
struct LaneEnd {
  uint64_t endNs;
  size_t index;
  uint32_t lane;
  bool operator>(const LaneEnd& o) const { return std::tie(endNs, index) > std::tie(o.endNs, o.index); }
};

// The events of one (device, stream, graph) and their lanes.
struct TrackGroup {
  DeviceTrack key;
  uint64_t lastStartNs = 0;
  bool inOrder = true;  // events arrived by start time (the usual case: placed in one pass)
  std::vector<LaneEnd> lanes;
  uint32_t laneCount = 0;
  uint32_t firstTrack = 0;

  // An event may follow one that ends exactly where it starts only if written after it: at
  // equal timestamps the file order decides.
  static bool fits(const LaneEnd& lane, uint64_t startNs, size_t index) {
    return lane.endNs < startNs || (lane.endNs == startNs && lane.index < index);
  }

  // The lane of an event, given in start order.
  uint32_t place(uint64_t startNs, uint64_t endNs, size_t index) {
    const auto later = std::greater<LaneEnd>();
    if (lanes.size() == 1 && fits(lanes[0], startNs, index)) {  // one lane so far: no heap to keep
      lanes[0].endNs = endNs;
      lanes[0].index = index;
      return 0;
    }
    if (!lanes.empty()) {
      const LaneEnd& first = lanes.front();
      if (fits(first, startNs, index)) {
        const uint32_t lane = first.lane;
        std::pop_heap(lanes.begin(), lanes.end(), later);
        lanes.back() = {endNs, index, lane};
        std::push_heap(lanes.begin(), lanes.end(), later);
        return lane;
      }
    }
    lanes.push_back({endNs, index, laneCount});
    std::push_heap(lanes.begin(), lanes.end(), later);
    return laneCount++;
  }
};

uint64_t endOf(const DeviceEvent& e) { return e.endNs > e.startNs ? e.endNs : e.startNs; }

}  // namespace

DeviceTrackPlan::DeviceTrackPlan(const ChunkedVector<DeviceEvent>& events) : trackOf_(events.size()) {
  const std::vector<uint32_t> graphs = graphNumbers(events);
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> groupOfKey;
  std::vector<TrackGroup> groups;
  std::tuple<uint32_t, uint32_t, uint32_t> lastKey{~0u, ~0u, ~0u};
  uint32_t lastGroup = 0;
  for (size_t i = 0; i < events.size(); ++i) {  // group each event; note who arrived out of order
    const DeviceEvent& e = events[i];
    const std::tuple<uint32_t, uint32_t, uint32_t> key{e.deviceId, e.streamId, graphs.empty() ? 0 : graphs[i]};
    if (key != lastKey) {
      auto [it, fresh] = groupOfKey.emplace(key, static_cast<uint32_t>(groups.size()));
      if (fresh) {
        groups.emplace_back();
        groups.back().key = {e.deviceId, e.streamId, std::get<2>(key), 0};
      }
      lastKey = key;
      lastGroup = it->second;
    }
    TrackGroup& g = groups[lastGroup];
    if (e.startNs < g.lastStartNs) g.inOrder = false;
    g.lastStartNs = e.startNs;
    trackOf_[i] = lastGroup;
  }
  std::vector<uint32_t> lane(events.size());
  std::vector<std::vector<size_t>> unordered(groups.size());
  for (size_t i = 0; i < events.size(); ++i) {
    TrackGroup& g = groups[trackOf_[i]];
    if (g.inOrder) lane[i] = g.place(events[i].startNs, endOf(events[i]), i);
    else unordered[trackOf_[i]].push_back(i);
  }
  for (size_t gi = 0; gi < groups.size(); ++gi) {  // the rest by start time
    std::vector<size_t>& order = unordered[gi];
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::make_pair(events[a].startNs, a) < std::make_pair(events[b].startNs, b);
    });
    for (size_t i : order) lane[i] = groups[gi].place(events[i].startNs, endOf(events[i]), i);
  }
  for (const auto& entry : groupOfKey) {  // tracks in key order, each group's lanes together
    TrackGroup& g = groups[entry.second];
    g.firstTrack = static_cast<uint32_t>(tracks_.size());
    for (uint32_t l = 0; l < g.laneCount; ++l) tracks_.push_back({g.key.device, g.key.stream, g.key.graph, l});
  }
  for (size_t i = 0; i < events.size(); ++i) trackOf_[i] = groups[trackOf_[i]].firstTrack + lane[i];
}

}  // namespace ftp
