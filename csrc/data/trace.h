// The events of a data="trace" session: one compact event per kernel or copy (56 bytes) and
// one per closed scope, in append-only chunked storage (see TraceStore).
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "data/records.h"

namespace ftp {

struct DeviceEvent {
  uint64_t startNs;
  uint64_t endNs;
  uint64_t launchNs;  // host time of the launch call, for the launch -> kernel flow arrow
  uint32_t context;   // node in the session tree (scope/frame/state path), kernel excluded
  uint32_t name;
  uint32_t correlation;
  uint32_t streamId;
  uint32_t config;    // index into the session tree's launch configs
  uint32_t tid;       // launching thread
  uint32_t graphNode; // graph replays: the graph node id folded to 32 bits (never 0), else 0
  uint16_t deviceId;
  uint8_t kind;       // RecordKind
  uint8_t deviceType;
};
static_assert(sizeof(DeviceEvent) <= 64, "a trace event must stay within 64 bytes");

struct ScopeEvent {
  uint64_t startNs;
  uint64_t endNs;
  uint32_t name;
  uint32_t tid;
};

// Append-only storage in fixed chunks: growing never copies, so the memory per event stays at
// sizeof(T) (a std::vector briefly holds twice its contents while it reallocates).
template <typename T>
class ChunkedVector {
 public:
  static constexpr size_t kChunk = 1 << 14;
  void push_back(const T& value) {
    if (size_ % kChunk == 0) chunks_.emplace_back(new T[kChunk]);
    chunks_.back()[size_ % kChunk] = value;
    ++size_;
  }
  size_t size() const { return size_; }
  const T& operator[](size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  T& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  void swap(ChunkedVector& other) {
    chunks_.swap(other.chunks_);
    std::swap(size_, other.size_);
  }
  void clear() {
    chunks_.clear();
    chunks_.shrink_to_fit();
    size_ = 0;
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace ftp
