// The vendor-neutral records every backend produces and every store consumes.
#pragma once
#include <cstdint>
#include <vector>

namespace ftp {

enum class RecordKind : uint8_t { Kernel = 0, Memcpy = 1, Memset = 2 };

// Numbering shared with the tree format's `device_type` metric (CUDA and HIP match Triton's
// own profiler, so its users read the same numbers).
enum class DeviceType : int32_t { HIP = 0, CUDA = 1, CPU = 2, NPU = 3, MUSA = 4, COREX = 5 };

// One finished kernel or copy, as a backend reports it.
struct DeviceRecord {
  RecordKind kind = RecordKind::Kernel;
  DeviceType deviceType = DeviceType::CUDA;
  uint32_t correlation = 0;
  uint32_t deviceId = 0;
  uint32_t streamId = 0;
  uint64_t startNs = 0;  // on the host monotonic clock (backends convert)
  uint64_t endNs = 0;
  uint32_t name = 0;     // interned display (demangled) name
  uint32_t mangled = 0;  // interned raw name, 0 when the same as name
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers = 0;
  int32_t staticSharedMemory = 0;
  int32_t dynamicSharedMemory = 0;
  uint64_t bytes = 0;  // copies and sets
  uint64_t graphNodeId = 0;  // the graph node that ran it (graph launches), else 0
  // Its times are on no clock the tracer converts (CUPTI stamps kernel-replay records 0 or on
  // another clock): startNs holds 0 and endNs the duration; the profiler places it at its launch.
  bool offClock = false;
};

// Launch geometry and resources, interned so that each trace event carries 4 bytes for them.
struct LaunchConfig {
  int32_t grid[3];
  int32_t block[3];
  int32_t registers;
  int32_t staticSharedMemory;
  int32_t dynamicSharedMemory;
  uint64_t bytes;
  bool operator==(const LaunchConfig& o) const;
};

// Per-launch values supplied by a launch-metadata hook (hook="triton"): a name override and
// metrics such as flops16 or bytes. Owned by the pending launch that carries it.
struct LaunchMetadata {
  uint32_t name = 0;
  std::vector<std::pair<uint32_t, double>> metrics;
};

}  // namespace ftp
