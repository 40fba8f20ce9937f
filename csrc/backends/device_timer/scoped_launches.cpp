#include "backends/device_timer/scoped_launches.h"

#include <atomic>

#include "data/records.h"
#include "session/profiler.h"

namespace ftp {

namespace {
std::atomic<uint32_t> scopedSerial{0};
}  // namespace

uint32_t scopedLaunch(uint64_t launchNs) {
  const uint32_t correlation =
      kScopedCorrelationBase | (scopedSerial.fetch_add(1, std::memory_order_relaxed) & kScopedCorrelationMask);
  Profiler::instance().onLaunch(correlation, false, launchNs, TimeSource::DeviceTimer);
  return correlation;
}

void scopedRecord(TimerRing& ring, const ScopedTimes& t) {
  const ClockMap clock = ring.clock();
  DeviceRecord r;
  r.kind = RecordKind::Kernel;
  r.deviceType = DeviceType::CUDA;
  r.correlation = t.correlation;
  r.deviceId = ring.deviceId();
  r.streamId = ring.streamIndex(t.stream);
  r.startNs = uint64_t(int64_t(t.startStamp) - clock.offsetNs);
  r.endNs = uint64_t(int64_t(t.endStamp) - clock.offsetNs);
  r.name = t.name;
  for (int i = 0; i < 3; ++i) r.grid[i] = t.grid[i], r.block[i] = t.block[i];
  Profiler::instance().onRecord(r, TimeSource::DeviceTimer);
}

}  // namespace ftp
