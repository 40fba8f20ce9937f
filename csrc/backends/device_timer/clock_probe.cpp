// The device timer's clock probe: where %globaltimer stands against the host's monotonic clock.
//
// Two one-way readings bound the offset (device - host), as NTP does with a round trip:
//   upper: the device reads a word the host keeps writing its clock into (a value is only read
//          after it was written: offset <= device time after the read - host value);
//   lower: the host reads a word the device keeps writing its timer into (likewise: offset >=
//          device value - host time after the read).
// The words live in pinned host memory mapped write-combined: the host's reads and writes go to
// memory, never to a cached copy that the device's accesses would not see. (A first version read
// a cacheable word from the device only, and read stale values.)
#include <algorithm>
#include <atomic>
#include <limits>
#include <stdexcept>

#include "backends/device_timer/cuda_ring_device.h"
#include "backends/device_timer/cuda_timer_api.h"
#include "core/clock.h"

namespace ftp {

namespace {

// ftp_clock_read: `n` times, the timer, the host word, the timer again (the branch on the loaded
// value makes the second timer read wait for the load). ftp_clock_emit: the timer into the
// host word until the host raises `stop` (at most 20 ms).
const char* const kProbePtx = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry ftp_clock_read(.param .u64 ftp_out, .param .u64 ftp_host, .param .u32 ftp_n)
{
  .reg .pred %p<2>;
  .reg .b32 %i<2>;
  .reg .b64 %a<5>;
  ld.param.u64 %a0, [ftp_out];
  ld.param.u64 %a1, [ftp_host];
  ld.param.u32 %i0, [ftp_n];
  mov.u32 %i1, 0;
$ftp_loop:
  mov.u64 %a2, %globaltimer;
  ld.volatile.global.u64 %a3, [%a1];
  setp.eq.u64 %p1, %a3, 0;
  @%p1 bra $ftp_done;
  mov.u64 %a4, %globaltimer;
  st.global.u64 [%a0], %a2;
  st.global.u64 [%a0+8], %a3;
  st.global.u64 [%a0+16], %a4;
  add.u64 %a0, %a0, 24;
  add.u32 %i1, %i1, 1;
  setp.lt.u32 %p0, %i1, %i0;
  @%p0 bra $ftp_loop;
$ftp_done:
  ret;
}
.visible .entry ftp_clock_emit(.param .u64 ftp_word, .param .u64 ftp_stop)
{
  .reg .pred %p<2>;
  .reg .b32 %s;
  .reg .b64 %a<5>;
  ld.param.u64 %a0, [ftp_word];
  ld.param.u64 %a1, [ftp_stop];
  mov.u64 %a2, %globaltimer;
$ftp_emit:
  mov.u64 %a3, %globaltimer;
  st.volatile.global.u64 [%a0], %a3;
  membar.sys;
  ld.volatile.global.u32 %s, [%a1];
  setp.ne.u32 %p0, %s, 0;
  @%p0 bra $ftp_emit_done;
  sub.u64 %a4, %a3, %a2;
  setp.lt.u64 %p1, %a4, 20000000;
  @%p1 bra $ftp_emit;
$ftp_emit_done:
  ret;
}
)";

constexpr unsigned kSamples = 32;
// A probe whose bounds are wider than this apart is taken again, up to kProbeAttempts in all.
constexpr int64_t kTightProbeNs = 2'000;
constexpr unsigned kProbeAttempts = 4;
// How long the host waits for a probe kernel's samples (the emitting kernel stops after as long).
constexpr uint64_t kProbeDeadlineNs = 20'000'000;
constexpr unsigned kWritesPerCheck = 16;
constexpr unsigned kMapped = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
// The probe's mapped words, allocated once with the ring: mapping pinned memory is slow, and per
// probe it was most of a session's start (docs/performance.md).
constexpr size_t kHostClockWord = 0, kDeviceClockWord = 8, kStopWord = 16, kSamplesAt = 64;
constexpr size_t kProbeBytes = kSamplesAt + kSamples * 24;

void publish() { std::atomic_thread_fence(std::memory_order_seq_cst); }  // drains write-combining buffers

}  // namespace

void CudaRingDevice::loadProbes() {
  check(api_.moduleLoadData(&probeModule_, kProbePtx), "cuModuleLoadData (clock probe)");
  check(api_.moduleGetFunction(&probeRead_, probeModule_, "ftp_clock_read"), "cuModuleGetFunction");
  check(api_.moduleGetFunction(&probeEmit_, probeModule_, "ftp_clock_emit"), "cuModuleGetFunction");
  check(api_.memHostAlloc(&probeHost_, kProbeBytes, kMapped), "cuMemHostAlloc (clock probe)");
  check(api_.memHostGetDevicePointer(&probeDevice_, probeHost_, 0), "cuMemHostGetDevicePointer (clock probe)");
}

volatile uint64_t* CudaRingDevice::probeWord(size_t offset) {
  return reinterpret_cast<volatile uint64_t*>(static_cast<uint8_t*>(probeHost_) + offset);
}

int64_t CudaRingDevice::upperBound() {
  volatile uint64_t* word = probeWord(kHostClockWord);
  volatile uint64_t* samples = probeWord(kSamplesAt);
  for (unsigned i = 0; i < kSamples * 3; ++i) samples[i] = 0;
  *word = monotonicNs();
  publish();
  unsigned n = kSamples;
  CUdeviceptr samplesOnDevice = probeDevice_ + kSamplesAt, wordOnDevice = probeDevice_ + kHostClockWord;
  void* params[] = {&samplesOnDevice, &wordOnDevice, &n};
  CUresult result = api_.launchKernel(probeRead_, 1, 1, 1, 1, 1, 1, 0, copy_, params, nullptr);
  if (result == CUDA_SUCCESS) {
    // This thread writes the host clock while the kernel samples it, until the kernel's last
    // sample lands (a thread of its own cost a probe more than its samples: its start alone).
    // The last sample is read only every kWritesPerCheck writes: a read of write-combined
    // memory stalls the writes for about a microsecond, which ages the word the kernel reads.
    volatile uint64_t* lastSample = samples + 3 * (kSamples - 1) + 2;
    const uint64_t deadline = monotonicNs() + kProbeDeadlineNs;
    for (unsigned writes = 1;; ++writes) {
      const uint64_t now = monotonicNs();
      *word = now;
      publish();
      if (writes % kWritesPerCheck == 0 && (*lastSample || now > deadline)) break;
    }
    result = api_.streamSynchronize(copy_);
  }
  check(result, "the clock probe (device reads host)");
  int64_t upper = std::numeric_limits<int64_t>::max();
  for (unsigned i = 0; i < kSamples; ++i) {
    const uint64_t host = samples[3 * i + 1], after = samples[3 * i + 2];
    if (host) upper = std::min(upper, int64_t(after) - int64_t(host));
  }
  if (upper == std::numeric_limits<int64_t>::max())
    throw std::runtime_error("backend 'device_timer': the clock probe read no sample");
  return upper;
}

int64_t CudaRingDevice::lowerBound() {
  volatile uint64_t* timer = probeWord(kDeviceClockWord);
  volatile uint64_t* stopFlag = probeWord(kStopWord);
  *timer = 0;
  *stopFlag = 0;
  publish();
  CUdeviceptr timerWord = probeDevice_ + kDeviceClockWord, stopWord = probeDevice_ + kStopWord;
  void* params[] = {&timerWord, &stopWord};
  check(api_.launchKernel(probeEmit_, 1, 1, 1, 1, 1, 1, 0, copy_, params, nullptr), "the clock probe (host reads device)");
  int64_t lower = std::numeric_limits<int64_t>::min();
  const uint64_t deadline = monotonicNs() + kProbeDeadlineNs;
  unsigned seen = 0;
  while (seen < kSamples && monotonicNs() < deadline) {
    const uint64_t device = *timer;
    const uint64_t after = monotonicNs();
    if (!device) continue;
    lower = std::max(lower, int64_t(device) - int64_t(after));
    ++seen;
  }
  *stopFlag = 1;
  publish();
  check(api_.streamSynchronize(copy_), "the clock probe (host reads device)");
  if (!seen) throw std::runtime_error("backend 'device_timer': the clock probe saw no device timer value");
  return lower;
}

ClockProbe CudaRingDevice::probeClock() {
  Current scope(api_, ctx_);
  // A probe is usually good to under a microsecond, but on a loaded host the thread writing the
  // host's clock, or the one reading the device's, may be descheduled through all of a probe's
  // samples, and its bounds come out tens of microseconds apart. Such a probe is taken again, and
  // the tightest kept.
  ClockProbe best;
  for (unsigned attempt = 0; attempt < kProbeAttempts; ++attempt) {
    const int64_t upper = upperBound(), lower = lowerBound();
    const ClockProbe probe{lower + (upper - lower) / 2, (upper - lower) / 2, lower, upper};
    if (attempt == 0 || probe.uncertaintyNs < best.uncertaintyNs) best = probe;
    if (best.uncertaintyNs <= kTightProbeNs) break;
  }
  return best;
}

}  // namespace ftp
