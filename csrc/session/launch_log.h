// The per-session launch log: every record a session took, in arrival order, with the
// context it landed under. Vendor imports (ixKN, msprof CSVs) match their rows to these
// launches after the run. Off by default; while no session has it on, the hook in
// Session::addRecord costs one relaxed atomic load.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "data/records.h"

namespace ftp {

class Session;

struct LaunchLogEntry {
  uint32_t correlation;
  uint32_t name;      // interned display name (a launch-metadata override applied): the node's
  uint32_t kernel;    // interned kernel name as the record gives it: what vendor tools call it
  uint32_t context;   // the context node it was launched under
  uint32_t state;     // 0 = none
  uint32_t deviceId;
  uint32_t streamId;
  uint32_t tid;
  uint64_t startNs;
  uint64_t endNs;
  uint64_t launchNs;
  RecordKind kind;
  DeviceType deviceType;
};

namespace launch_log {

// Bit s set: the session in slot s keeps a log.
extern std::atomic<uint32_t> enabledSlots;

void enable(const Session& session, bool on);  // on: starts an empty log; off: frees it
void add(const Session& session, uint32_t context, uint32_t state, const DeviceRecord& record,
         const LaunchMetadata* meta, uint64_t launchNs, uint32_t tid);
std::vector<LaunchLogEntry> entries(const Session& session);

// The hook: Session::addRecord calls this for every record.
inline void note(const Session& session, int slot, uint32_t context, uint32_t state,
                 const DeviceRecord& record, const LaunchMetadata* meta, uint64_t launchNs,
                 uint32_t tid) {
  if (enabledSlots.load(std::memory_order_relaxed) & (1u << slot))
    add(session, context, state, record, meta, launchNs, tid);
}

}  // namespace launch_log
}  // namespace ftp
