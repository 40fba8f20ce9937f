// Host clock and thread ids shared by every part of the core.
#pragma once
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

namespace ftp {

// CLOCK_MONOTONIC in ns: cheap (vDSO) and never jumps; vendor clocks are mapped onto it.
inline uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

inline uint64_t realtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// The kernel's thread id, cached per thread: it is what Perfetto shows as the thread track.
inline uint32_t currentTid() {
  static thread_local uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

}  // namespace ftp
