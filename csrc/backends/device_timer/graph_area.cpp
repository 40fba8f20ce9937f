#include "backends/device_timer/graph_area.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "backends/device_timer/slot_record.h"
#include "session/profiler.h"

namespace ftp {

GraphArea::GraphArea(RingDevice& device, uint32_t records, uint32_t nodesPerChunk, uint32_t maxChunks)
    : device_(device), records_(records), perChunk_(nodesPerChunk ? nodesPerChunk : 1), maxChunks_(maxChunks),
      replays_(records) {
  std::lock_guard<std::mutex> lock(mutex_);
  growLocked();  // ahead of any capture: a first capture allocates nothing
}

bool GraphArea::growLocked() {
  if (chunks_.size() >= maxChunks_) return false;
  const uint64_t base = device_.allocGraphChunk(perChunk_ * descriptorBytes());
  if (!base) return false;
  chunks_.push_back(Chunk{base, 0});
  return true;
}

uint64_t GraphArea::claim(uint64_t stream, uint32_t label, uint32_t& index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(capturing_.begin(), capturing_.end(), stream) == capturing_.end()) capturing_.push_back(stream);
  if ((chunks_.empty() || chunks_.back().used == perChunk_) && !growLocked()) {
    ++stats_.noRoom;
    return 0;
  }
  Chunk& chunk = chunks_.back();
  index = uint32_t((chunks_.size() - 1) * perChunk_ + chunk.used);
  const uint64_t descriptor = chunk.base + chunk.used * descriptorBytes();
  ++chunk.used;
  read_.push_back(0);
  labels_.push_back(label);
  if (label) replays_.addNode(label);
  ++stats_.nodes;
  return descriptor | kGraphTag;
}

void GraphArea::readBack(const ClockMap& clock, uint32_t deviceId) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (read_.empty()) return;
  if (captureOpenLocked() || !device_.syncDevice()) {
    ++stats_.skipped;
    return;
  }
  ++stats_.readbacks;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const Chunk& chunk = chunks_[c];
    if (!chunk.used) continue;
    host_.resize(chunk.used * descriptorBytes());
    device_.readDevice(chunk.base, host_.data(), host_.size());
    for (uint32_t n = 0; n < chunk.used; ++n)
      readNodeLocked(uint32_t(c * perChunk_ + n), host_.data() + n * descriptorBytes(), clock, deviceId);
  }
  settleLocked();
  // Room for the next captures, allocated now rather than during one.
  if (chunks_.back().used * 2 >= perChunk_) growLocked();
}

bool GraphArea::captureOpenLocked() {
  capturing_.erase(std::remove_if(capturing_.begin(), capturing_.end(), [&](uint64_t s) { return !device_.capturing(s); }),
                   capturing_.end());
  return !capturing_.empty();
}

namespace {

// Replays every counter pair has seen finish (entry tickets and exit counts), and whether one is
// under way (a replay launched after the sync may be running: it zeroes the oldest record).
struct TicketCount {
  uint64_t done = UINT64_MAX;
  bool running = false;
};

TicketCount countTickets(const uint8_t* header, uint64_t gridWarps) {
  TicketCount c;
  uint64_t most = 0;
  for (uint32_t counter = 0; counter < kGraphTicketCounters; ++counter) {
    const uint64_t perReplay = counterWarps(gridWarps, counter);
    if (!perReplay) break;  // the counters a grid uses come first
    uint64_t pair[2];  // entry tickets, exit counts
    std::memcpy(pair, header + counter * kGraphTicketBytes, sizeof pair);
    const uint64_t entry = pair[0], exit = pair[1];
    c.done = std::min({c.done, entry / perReplay, exit / perReplay});
    most = std::max({most, entry / perReplay, exit / perReplay});
    c.running = c.running || entry % perReplay || exit % perReplay;
  }
  c.running = c.running || most != c.done;
  return c;
}

}  // namespace

void GraphArea::readNodeLocked(uint32_t index, const uint8_t* descriptor, const ClockMap& clock, uint32_t deviceId) {
  uint64_t firstTickets;
  std::memcpy(&firstTickets, descriptor, sizeof firstTickets);
  if (!firstTickets) return;  // never replayed (warp 0 of block 0 takes its tickets on pair 0)
  const uint8_t* records = descriptor + kGraphHeaderBytes;
  // The launch geometry (the same in every replay) gives the tickets one replay takes.
  uint32_t meta[4] = {0, 0, 0, 0};
  for (uint32_t i = 0; i < records_ && !meta[0]; ++i) std::memcpy(meta, records + i * kTimerSlotBytes, sizeof meta);
  if (!meta[0]) return;  // the first replay is under way
  const uint64_t blocks = uint64_t(meta[1]) * (meta[2] & 0xFFFF) * (meta[2] >> 16);
  const uint64_t warps = warpsPerBlock(meta[3]);
  if (!blocks || !warps) return;
  const TicketCount count = countTickets(descriptor, blocks * warps);
  const uint64_t done = count.done;
  const bool running = count.running;
  uint64_t& read = read_[index];
  if (done <= read) return;
  const uint64_t fresh = done - read;
  const uint64_t kept = std::min<uint64_t>(fresh, records_ - 1 - (running ? 1 : 0));
  stats_.lost += fresh - kept;
  SlotDecode counts;
  for (uint64_t q = done - kept; q < done; ++q) {
    DeviceRecord r;
    if (!decodeSlot(records + (q % records_) * kTimerSlotBytes, records_ * kTimerSlotBytes, clock, r, counts)) continue;
    r.deviceId = deviceId;
    deliver(index, q, done, r);
  }
  read = done;
  stats_.replays += counts.delivered;
  stats_.untimed += counts.untimed;
  stats_.unknown += counts.unknown;
}

void GraphArea::deliver(uint32_t index, uint64_t ordinal, uint64_t done, DeviceRecord& r) {
  Profiler& profiler = Profiler::instance();
  r.graphNodeId = nodeKeyOf(index);
  GraphReplays::Found found{};
  const GraphReplays::Match match = replays_.match(labels_[index], ordinal, done, found);
  if (match == GraphReplays::Match::Skip) return;  // replayed while no device-timer session was active
  // Under the replay's launch, then <captured_at> and the capture path (Profiler::onRecord), on
  // the stream replay() ran on. A launch no longer pending (its sessions gone, or pruned after a
  // flush whose readback was put off) leaves the record to the capture context, as unmatched.
  if (match == GraphReplays::Match::Matched && profiler.launchPending(found.correlation)) {
    r.correlation = found.correlation;
    r.streamId = found.stream;
    profiler.onRecord(r, TimeSource::DeviceTimer);
    ++stats_.matched;
    return;
  }
  r.correlation = correlationOf(index);
  r.streamId = kGraphReplayStream;
  profiler.onReplayRecord(r);
  ++stats_.unmatched;
}

void GraphArea::settleLocked() {
  // A graph's replays read back from every one of its nodes need their notes no more.
  std::unordered_map<uint32_t, uint64_t> frontier;  // label -> least replays read over its nodes
  for (size_t n = 0; n < labels_.size(); ++n) {
    if (!labels_[n]) continue;
    auto [it, fresh] = frontier.emplace(labels_[n], read_[n]);
    if (!fresh) it->second = std::min(it->second, read_[n]);
  }
  for (const auto& [label, upTo] : frontier) replays_.settle(label, upTo);
}

GraphStats GraphArea::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace ftp
