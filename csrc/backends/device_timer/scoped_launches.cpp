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
  ring.deliverTimed(t.correlation, t.name, t.stream, uint64_t(int64_t(t.startStamp) - clock.offsetNs),
                    uint64_t(int64_t(t.endStamp) - clock.offsetNs), t.grid, t.block);
}

}  // namespace ftp
