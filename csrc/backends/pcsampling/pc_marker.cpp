#include "backends/pcsampling/pc_marker.h"

#include <algorithm>

#include "backends/nvidia/cuda_driver.h"
#include "context/thread_state.h"

namespace ftp {
namespace {

// Spins until `cycles` SM clock cycles have passed. PTX, JIT-compiled by the driver for the GPU
// at hand (the profiler ships no device code); the entry's name is what the samples carry.
const char kMarkerPtx[] = R"(
.version 6.0
.target sm_50
.address_size 64
.visible .entry flagtree_pcsampling_end_marker(.param .u64 cycles)
{
  .reg .pred %p;
  .reg .b64 %start, %now, %limit, %spent;
  ld.param.u64 %limit, [cycles];
  mov.u64 %start, %clock64;
SPIN:
  mov.u64 %now, %clock64;
  sub.u64 %spent, %now, %start;
  setp.lt.u64 %p, %spent, %limit;
  @%p bra SPIN;
  ret;
}
)";

// Marks the thread's driver calls as the profiler's own for its lifetime.
class InternalCalls {
 public:
  InternalCalls() : ts_(threadState()) { ts_.internalCalls = true; }
  ~InternalCalls() { ts_.internalCalls = false; }

 private:
  ThreadState& ts_;
};

}  // namespace

bool launchPcMarker(CUcontext context, PcMarkerCache& cache, uint32_t period) {
  CudaDriver& driver = CudaDriver::instance();
  InternalCalls internal;  // the module load and the launch: not the program's
  const int sms = driver.multiprocessorCount(context);
  if (sms <= 0) return false;
  // 16 sample periods (CUPTI's default period when none is set is 2^17 cycles at most), at
  // least 20,000 cycles (~10 us at 2 GHz).
  const uint32_t log2 = period ? period : 17;
  uint64_t cycles = std::max<uint64_t>(20000, uint64_t(16) << log2);
  void* params[] = {&cycles};
  return driver.launchOwnKernel(context, kMarkerPtx, kPcMarkerName, &cache.module, &cache.function,
                                unsigned(2 * sms), 128, params);
}

}  // namespace ftp
