#include "backends/device_timer/graph_replays.h"

#include <algorithm>
#include <atomic>

#include "data/records.h"
#include "session/profiler.h"

namespace ftp {

namespace {

// Correlation ids of noted graph replays: a range of their own (0xA0000000 and up), clear of the
// event-timed launches' (0xB...), the ring's (0xC...), the scoped launches' (0xD...) and the graph
// nodes' (0xE...). Unique among
// pending launches: at most `window` notes per graph are kept.
constexpr uint32_t kReplayBase = 0xA0000000u;
constexpr uint32_t kReplayMask = 0x0FFFFFFFu;
std::atomic<uint32_t> nextReplay{0};
std::atomic<uint32_t> nextLabel{0};
thread_local uint32_t capturing = 0;

}  // namespace

uint32_t GraphReplays::beginCapture() {
  capturing = nextLabel.fetch_add(1, std::memory_order_relaxed) + 1;
  return capturing;
}

void GraphReplays::endCapture() { capturing = 0; }

uint32_t GraphReplays::currentLabel() { return capturing; }

void GraphReplays::addNode(uint32_t label) {
  std::lock_guard<std::mutex> lock(mutex_);
  Graph& g = graphs_[label];
  if (g.notes.empty()) g.notes.assign(window_, Note{0, 0, 0, false});
  ++g.nodes;
}

uint32_t GraphReplays::nodes(uint32_t label) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = graphs_.find(label);
  return it == graphs_.end() ? 0 : it->second.nodes;
}

void GraphReplays::forget(Note& note) {
  if (note.valid && note.correlation) Profiler::instance().forgetGraphLaunch(note.correlation);
  note.valid = false;
}

void GraphReplays::noteReplay(uint32_t label, uint16_t stream, uint64_t launchNs) {
  Profiler& profiler = Profiler::instance();
  uint32_t correlation = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = graphs_.find(label);
    if (it == graphs_.end()) return;  // no timed launch in the graph: nothing to place
    Graph& g = it->second;
    const uint64_t ordinal = g.replays++;
    Note& note = g.notes[ordinal % window_];
    forget(note);  // replay ordinal - window: its records can no longer be read back
    if (!g.unseen && profiler.activeMask(TimeSource::DeviceTimer))
      correlation = kReplayBase | (nextReplay.fetch_add(1, std::memory_order_relaxed) & kReplayMask);
    note = Note{ordinal, correlation, stream, true};
  }
  // The graph is launched after this returns: its records cannot be read back before.
  if (correlation) profiler.onLaunch(correlation, true, launchNs, TimeSource::DeviceTimer);
}

GraphReplays::Match GraphReplays::match(uint32_t label, uint64_t ordinal, uint64_t done, Found& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = label ? graphs_.find(label) : graphs_.end();
  if (it == graphs_.end()) return Match::Fallback;
  Graph& g = it->second;
  // Every replay through torch is noted before it is launched: more replays run than noted means
  // the graph was also launched another way, and ordinals no longer pair replays with notes.
  if (done > g.replays && !g.unseen) {
    g.unseen = true;
    for (Note& note : g.notes) forget(note);
  }
  const Note& note = g.notes[ordinal % window_];
  if (g.unseen || !note.valid || note.ordinal != ordinal) return Match::Fallback;
  if (!note.correlation) return Match::Skip;
  out = Found{note.correlation, note.stream};
  return Match::Matched;
}

void GraphReplays::settle(uint32_t label, uint64_t upTo) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = graphs_.find(label);
  if (it == graphs_.end()) return;
  Graph& g = it->second;
  upTo = std::min(upTo, g.replays);
  for (uint64_t q = std::max(g.settled, upTo > window_ ? upTo - window_ : 0); q < upTo; ++q) {
    Note& note = g.notes[q % window_];
    if (note.valid && note.ordinal == q) forget(note);
  }
  g.settled = std::max(g.settled, upTo);
}

}  // namespace ftp
