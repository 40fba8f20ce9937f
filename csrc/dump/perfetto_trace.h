// Writes a data="perfetto" session as a Perfetto protobuf trace (`.pftrace`, TrackEvent), the
// same content as the Chrome trace: kernels and copies as slices on one track per device
// stream (below a track per device; graph replays and overlapping kernels on tracks of their
// own, see perfetto_tracks.h), scopes as slices and launches as instants on the launching
// thread's track, a flow from each launch to its kernel. Names, categories, annotation names
// and context paths are interned once per file, so an event costs a few dozen bytes. Encoded by
// hand (dump/proto_out.h), each packet straight into the file's buffer.
#pragma once
#include <cstdint>

#include "dump/chrome_trace.h"
#include "dump/out_file.h"
#include "dump/output.h"

namespace ftp {

// Writes into `file` (the caller commits). Returns the number of device events written.
uint64_t writePerfettoTrace(const ChromeTraceInput& input, const OutputRequest& request, AtomicOutFile& file);

}  // namespace ftp
