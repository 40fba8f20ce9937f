#include "session/launch_log.h"

#include <memory>
#include <mutex>

#include "context/thread_state.h"
#include "session/session.h"

namespace ftp {
namespace launch_log {

std::atomic<uint32_t> enabledSlots{0};

namespace {

struct Log {
  uint32_t uid = 0;  // the session the log belongs to (slots are reused)
  std::vector<LaunchLogEntry> entries;
};

std::mutex& logMutex(int slot) {
  static std::mutex mutexes[kMaxSessions];
  return mutexes[slot];
}

Log& logAt(int slot) {
  static Log logs[kMaxSessions];
  return logs[slot];
}

}  // namespace

void enable(const Session& session, bool on) {
  const int slot = session.slot;
  std::lock_guard<std::mutex> lock(logMutex(slot));
  Log& log = logAt(slot);
  log.entries.clear();
  log.entries.shrink_to_fit();
  log.uid = on ? session.uid : 0;
  if (on) enabledSlots.fetch_or(1u << slot, std::memory_order_relaxed);
  else enabledSlots.fetch_and(~(1u << slot), std::memory_order_relaxed);
}

void add(const Session& session, uint32_t context, uint32_t state, const DeviceRecord& record,
         const LaunchMetadata* meta, uint64_t launchNs, uint32_t tid) {
  LaunchLogEntry e{};
  e.correlation = record.correlation;
  e.name = (meta && meta->name) ? meta->name : record.name;
  e.kernel = record.name;
  e.context = context;
  e.state = state;
  e.deviceId = record.deviceId;
  e.streamId = record.streamId;
  e.tid = tid;
  e.startNs = record.startNs;
  e.endNs = record.endNs;
  e.launchNs = launchNs;
  e.kind = record.kind;
  e.deviceType = record.deviceType;
  std::lock_guard<std::mutex> lock(logMutex(session.slot));
  Log& log = logAt(session.slot);
  if (log.uid == session.uid) log.entries.push_back(e);  // else: a log of the slot's previous session
}

std::vector<LaunchLogEntry> entries(const Session& session) {
  std::lock_guard<std::mutex> lock(logMutex(session.slot));
  const Log& log = logAt(session.slot);
  return log.uid == session.uid ? log.entries : std::vector<LaunchLogEntry>{};
}

}  // namespace launch_log
}  // namespace ftp
