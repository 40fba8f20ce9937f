// Writes a data="trace" session as Chrome trace-event JSON (opened by Perfetto and
// chrome://tracing): kernels on one track per device stream, scopes and launches on the
// launching thread's track, and a flow arrow from each launch to its kernel.
#pragma once
#include <cstdint>
#include <string>

#include "session/session.h"

namespace ftp {

struct TraceWriteOptions {
  std::string path;
  uint64_t originNs = 0;  // host monotonic time shown as t=0
  int pid = 0;            // the profiled process, for the host tracks
  std::string otherDataJson = "{}";  // session metadata, embedded as "otherData"
  bool clearAfter = false;  // empty the event store once written, under the same locks (parts)
};

// Returns the number of device events written; throws std::runtime_error on I/O failure.
uint64_t writeChromeTrace(Session& session, const TraceWriteOptions& options);

}  // namespace ftp
