// backend="device_timer": the replay context of CUDA-graph replays. The graph area (graph_area.h)
// sees replays on the device, never the graph launches; a graph captured and replayed through
// torch.cuda.CUDAGraph is told to us by the Python wrapper of capture_begin, capture_end and
// replay (backends/device_timer/graph_replays.py):
//   - capture_begin labels the capture: launches the calling thread captures until capture_end
//     get descriptors of that label (a graph);
//   - each replay() notes the label's next replay: its ordinal, its stream and, while a device-timer
//     session is active, a launch of its own (Profiler::onLaunch, several records under one id,
//     as a CUPTI graph launch), which takes the context replay() ran in.
// A descriptor's tickets give each replay record its ordinal r (graph_area.cpp), so record r of
// every node of the graph is matched to the graph's noted replay r: filed under replay context ->
// <captured_at> -> capture path, on the stream replay() ran on. The match holds while every replay
// of the graph goes through replay(), the replays of one graph noted in launch order (one thread
// at a time, as torch does); a node that has run more replays than were noted means another path
// launched the graph (a raw cudaGraphLaunch): from then on the graph's records go under the
// capture context only, on the graph-replay stream, as for unlabelled graphs (counted).
#pragma once
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ftp {

class GraphReplays {
 public:
  // `window`: replay records per descriptor (R); older replays can never be read back.
  explicit GraphReplays(uint32_t window) : window_(window ? window : 1) {}

  // Capture labels of the calling thread (0: none; labels are never reused).
  static uint32_t beginCapture();
  static void endCapture();
  static uint32_t currentLabel();

  void addNode(uint32_t label);  // a descriptor claimed under `label` (non-zero)
  uint32_t nodes(uint32_t label);  // descriptors claimed under `label` so far
  // Replay of graph `label` through torch on ring stream `stream`: noted (no-op for a label
  // without descriptors).
  void noteReplay(uint32_t label, uint16_t stream, uint64_t launchNs);

  enum class Match { Matched, Skip, Fallback };
  struct Found {
    uint32_t correlation;
    uint16_t stream;
  };
  // Record `ordinal` of a node of `label` whose descriptor has run `done` replays: Matched (to
  // the noted replay in `out`), Skip (noted while no device-timer session was active: nobody's),
  // or Fallback (unlabelled, or the graph's replays were not all noted).
  Match match(uint32_t label, uint64_t ordinal, uint64_t done, Found& out);
  // Forgets the notes of `label` before ordinal `upTo` (every node has read them back).
  void settle(uint32_t label, uint64_t upTo);

 private:
  struct Note {
    uint64_t ordinal;
    uint32_t correlation;  // its launch, 0 when no session took it
    uint16_t stream;
    bool valid;
  };
  struct Graph {
    uint32_t nodes = 0;
    uint64_t replays = 0;  // noted so far
    uint64_t settled = 0;  // notes before this ordinal are forgotten
    bool unseen = false;   // replays were launched that replay() did not note
    std::vector<Note> notes;  // ordinal % window
  };
  static void forget(Note& note);

  const uint32_t window_;
  std::mutex mutex_;
  std::unordered_map<uint32_t, Graph> graphs_;
};

}  // namespace ftp
