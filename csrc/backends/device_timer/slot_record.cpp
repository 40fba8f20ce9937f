#include "backends/device_timer/slot_record.h"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "backends/device_timer/timer_ring.h"
#include "core/strings.h"

namespace ftp {

namespace {

std::mutex namesMutex;
std::unordered_map<uint32_t, uint32_t>& kernelNames() {
  static auto* names = new std::unordered_map<uint32_t, uint32_t>();  // leaked: read by the worker at exit
  return *names;
}

uint32_t lookupName(uint32_t id, bool& known) {
  std::lock_guard<std::mutex> lock(namesMutex);
  auto it = kernelNames().find(id);
  known = it != kernelNames().end();
  return known ? it->second : 0;
}

}  // namespace

uint32_t TimerRing::kernelId(const char* name, size_t size) {
  uint32_t h = 2166136261u;  // FNV-1a: stable across processes (kernels come from the disk cache)
  for (size_t i = 0; i < size; ++i) h = (h ^ uint8_t(name[i])) * 16777619u;
  return h ? h : 1;  // 0 marks a slot no kernel wrote
}

void TimerRing::nameKernel(uint32_t id, uint32_t internedName) {
  std::lock_guard<std::mutex> lock(namesMutex);
  kernelNames()[id] = internedName;
}

bool decodeSlot(const uint8_t* plane0, uint64_t planeStride, const ClockMap& clock, DeviceRecord& r,
                SlotDecode& counts) {
  uint32_t meta[4];
  std::memcpy(meta, plane0, sizeof meta);
  uint64_t start = ~0ull, end = 0;
  for (uint32_t lane = 0; lane < kTimerLanes; ++lane) {
    uint64_t words[2];
    std::memcpy(words, plane0 + (1 + lane) * planeStride, sizeof words);
    if (words[0] && ~words[0] < start) start = ~words[0];
    if (words[1] > end) end = words[1];
  }
  if (!meta[0] || start == ~0ull || end < start) {  // no stamps: the launch did not run
    ++counts.untimed;
    return false;
  }
  bool known = false;
  r.kind = RecordKind::Kernel;
  r.deviceType = DeviceType::CUDA;
  r.startNs = uint64_t(int64_t(start) - clock.offsetNs);
  r.endNs = uint64_t(int64_t(end) - clock.offsetNs);
  r.name = lookupName(meta[0], known);
  if (!known) {
    char text[32];
    std::snprintf(text, sizeof text, "<kernel %08x>", meta[0]);
    r.name = intern(text);
    ++counts.unknown;
  }
  r.grid[0] = int32_t(meta[1]), r.grid[1] = int32_t(meta[2] & 0xFFFF), r.grid[2] = int32_t(meta[2] >> 16);
  r.block[0] = int32_t(meta[3]), r.block[1] = 1, r.block[2] = 1;
  ++counts.delivered;
  return true;
}

}  // namespace ftp
