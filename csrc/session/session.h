// One profiling session: its context source (shadow or python), its data store (tree or
// trace) and its counters. Sessions live in the Profiler's slots.
#pragma once
#include <atomic>
#include <cstdint>

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

  const uint32_t uid;
  const int slot;
  const ContextKind context;
  const DataKind data;
  Tree tree;         // both modes: the trace names each event's context by a tree path
  TraceStore trace;  // data="trace" only
  std::atomic<uint64_t> records{0};
  std::atomic<uint64_t> unattributed{0};  // records whose launch was not seen (attributed to ROOT)
};

}  // namespace ftp
