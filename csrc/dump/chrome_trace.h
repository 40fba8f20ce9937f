// Writes a data="trace" session as Chrome trace-event JSON (opened by Perfetto and
// chrome://tracing): kernels on one track per device stream, scopes and launches on the
// launching thread's track, and a flow arrow from each launch to its kernel. Streams to disk
// through an AtomicOutFile; per event it only copies cached text and formats numbers.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/trace.h"
#include "data/tree.h"
#include "dump/out_file.h"
#include "dump/output.h"

namespace ftp {

struct ChromeTraceInput {
  const ChunkedVector<DeviceEvent>& device;
  const ChunkedVector<ScopeEvent>& scopes;
  const Tree& contexts;  // names each event's context node by its path
  // Metrics joined to launches after the fact (counters and the like), by correlation.
  const std::unordered_map<uint32_t, std::vector<std::pair<uint32_t, double>>>& extras;
};

// Writes the file's text into `file` (the caller commits it once it has released its lock).
// Returns the number of device events written.
uint64_t writeChromeTrace(const ChromeTraceInput& input, const OutputRequest& request, AtomicOutFile& file);

}  // namespace ftp
