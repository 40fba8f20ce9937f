// The roctracer (AMD) backend's tracer: HIP API callbacks on the launch, copy and set calls
// (the launch path: each one hands its correlation id to Profiler::onLaunch), the default
// activity pool's HIP_OPS records turned into DeviceRecords (the record path), flushing,
// and accounting. roctracer is not CUPTI-dialect (no buffer requests, no dropped-record
// query), so this mirrors CuptiTracer's shape rather than sharing its code.
// One tracer per process: roctracer has one default pool.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "backends/roctracer/roctracer_api.h"
#include "core/singleton.h"
#include "data/kernel_names.h"
#include "data/records.h"

namespace ftp {

class RoctracerTracer {
 public:
  // HIP API callback ids scanned for launch/copy/set names (ROCm 6 has about 500).
  static constexpr uint32_t kMaxHipApiId = 4096;

  struct Stats {
    uint64_t kernels = 0;
    uint64_t copies = 0;
    uint64_t sets = 0;
    uint64_t skipped = 0;  // barriers and records of other domains: no device work to report
    uint32_t tracedApis = 0;
    bool domainCallback = false;  // per-op callbacks refused: the whole HIP_API domain, filtered
  };

  static RoctracerTracer& instance();

  // Starts tracing on the first call and counts users; throws std::runtime_error with a
  // sentence naming the library and the call that failed (SubscriberTaken when another client
  // holds the default activity pool).
  void acquire(const RoctracerApi& api, size_t bufferBytes);
  // Ends tracing when the last user releases it (final flush included).
  void release();
  // Waits for the HIP devices (when the HIP runtime is loaded) and delivers the pool's records.
  void flush();
  bool running() const { return users_ > 0; }
  Stats stats() const;
  std::string libraryVersion() const;
  const std::string& libraryPath() const { return api_.path; }

 private:
  friend RoctracerTracer& leaked<RoctracerTracer>();
  RoctracerTracer() = default;
  void start();
  void stop();
  void flushLocked();
  void selectApis();
  void disableApis();
  void handleBuffer(const char* begin, const char* end);
  bool convert(const roc::Record& r, DeviceRecord& out);
  std::pair<uint32_t, bool> copyName(uint32_t op, uint32_t kind);

  static void onApi(uint32_t domain, uint32_t cid, const void* data, void* arg);
  static void onBuffer(const char* begin, const char* end, void* arg);

  std::mutex mutex_;  // start/stop/flush
  int users_ = 0;
  RoctracerApi api_;
  size_t bufferBytes_ = 8 << 20;
  bool poolOpen_ = false;
  int64_t clockOffset_ = 0;  // roctracer timestamp minus host monotonic time
  // Per HIP API id: 0 not traced, 1 a launch/copy/set, 2 a launch of several records (graphs).
  std::array<std::atomic<uint8_t>, kMaxHipApiId> traced_{};
  std::atomic<bool> domainCallback_{false};
  uint32_t tracedApis_ = 0;
  std::atomic<uint64_t> kernels_{0}, copies_{0}, sets_{0}, skipped_{0};
  KernelNames kernelNames_;
  std::mutex copyNamesMutex_;
  std::unordered_map<uint64_t, std::pair<uint32_t, bool>> copyNames_;     // op<<32|kind -> (name, set)
};

}  // namespace ftp
