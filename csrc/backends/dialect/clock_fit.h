// A vendor clock mapped to the host's monotonic clock by a line through two samples (each the
// vendor clock read between two monotonic reads, taken against their midpoint): one at start and
// one at each flush (dialects with D::kClockFit), so that a vendor clock running at another rate
// than the host's does not move records further off the longer a session runs. Until the second
// sample (records in buffers that filled up before any flush) the start's offset is used alone,
// and so it is while the two samples lie too close for the width of their read windows to be
// negligible (kMinSpanPerWidth). Only a record's start is placed on the line: durations stay the
// vendor's (a rate off by some ppm changes them by less than a nanosecond, a line through close
// samples would change them more).
#pragma once
#include <atomic>
#include <cstdint>

namespace ftp {

class ClockFit {
 public:
  static constexpr uint64_t kMinSpanPerWidth = 10000;  // a slope error of at most 1e-4

  // `width`: the host time the vendor read was taken within.
  void first(uint64_t vendor, uint64_t host, uint64_t width) {
    vendor0_ = vendor, host0_ = host, width0_ = width;
    two_.store(false, std::memory_order_release);
  }
  // Written under the tracer's lock, read by decoders on the library's threads.
  void second(uint64_t vendor, uint64_t host, uint64_t width) {
    two_.store(false, std::memory_order_release);
    vendor1_.store(vendor, std::memory_order_relaxed);
    host1_.store(host, std::memory_order_relaxed);
    const bool apart = host > host0_ && host - host0_ >= kMinSpanPerWidth * (width0_ + width + 1);
    if (vendor > vendor0_ && apart) two_.store(true, std::memory_order_release);
  }
  uint64_t toHost(uint64_t vendor, int64_t offset) const {
    if (!two_.load(std::memory_order_acquire)) return vendor - offset;
    const long double scale = static_cast<long double>(host1_.load(std::memory_order_relaxed) - host0_) /
                              static_cast<long double>(vendor1_.load(std::memory_order_relaxed) - vendor0_);
    const auto since = static_cast<long double>(static_cast<int64_t>(vendor - vendor0_));
    return host0_ + static_cast<uint64_t>(static_cast<int64_t>(since * scale));
  }

 private:
  uint64_t vendor0_ = 0, host0_ = 0, width0_ = 0;
  std::atomic<uint64_t> vendor1_{0}, host1_{0};
  std::atomic<bool> two_{false};
};

}  // namespace ftp
