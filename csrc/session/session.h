// One profiling session: its context source (shadow or python), its data store (tree or
// trace) and its counters. Sessions live in the Profiler's slots.
#pragma once
#include <atomic>
#include <cstdint>
#include <unordered_map>

#include "data/records.h"
#include "data/trace.h"
#include "data/tree.h"

namespace ftp {

enum class ContextKind : uint8_t { Shadow = 0, Python = 1 };
enum class DataKind : uint8_t { Tree = 0, Trace = 1 };

class Session {
 public:
  Session(uint32_t uid, int slot, ContextKind context, DataKind data)
      : uid(uid), slot(slot), context(context), data(data) {}

  // Adds a finished record launched under `contextNode` (and `state`, 0 = none).
  void addRecord(uint32_t contextNode, uint32_t state, const DeviceRecord& record,
                 const LaunchMetadata* meta, uint64_t launchNs, uint32_t tid);

  // The context of a record replayed from a graph: below the graph launch's node `launchNode`,
  // a scope "<captured_at>" and under it a copy of the capture-time path of `capturedNode`;
  // with kUnknownCapture (captured before this session, or while it was inactive), a scope
  // "<captured_at:unknown>". Takes the tree lock.
  static constexpr uint32_t kUnknownCapture = 0xFFFFFFFFu;
  uint32_t graftCaptured(uint32_t launchNode, uint32_t capturedNode);

  const uint32_t uid;
  const int slot;
  const ContextKind context;
  const DataKind data;
  Tree tree;         // both modes: the trace names each event's context by a tree path
  TraceStore trace;  // data="trace" only
  std::atomic<uint64_t> records{0};
  std::atomic<uint64_t> unattributed{0};  // records whose launch was not seen (attributed to ROOT)

 private:
  std::unordered_map<uint64_t, uint32_t> grafts_;  // (launch node, captured node) -> node; tree lock
};

}  // namespace ftp
