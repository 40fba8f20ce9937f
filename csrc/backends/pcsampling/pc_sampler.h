// PC sampling for one session at a time. At the first launch in a context: Enable + one
// configuration call. Then one of two ranges:
//   range=session (the default, backends/cupti.py): Start once per context at its first launch,
//     Stop + fetch at finalize and module unload (the next launch starts a new range); no
//     per-launch cost, continuous-mode samples per function.
//   range=launch, in the order Triton's Proton uses: at every launch ENTER cuCtxSynchronize then
//     Start, at EXIT Stop then GetData until no PC remains. Every launch is thereby sampled alone
//     (serialized with the work before it) and its samples carry its correlation id.
// Samples are aggregated here, resolved to source lines once per (cubin, function, pc) from the
// cubins seen at module load, and attached to kernel nodes. The per-context CUPTI calls are in
// pc_contexts.cpp, the rest in pc_sampler.cpp.
#pragma once
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/dialect/tracer_observer.h"
#include "backends/pcsampling/pc_samples.h"
#include "backends/pcsampling/pcsampling_api.h"
#include "core/singleton.h"

namespace ftp {

// The Python backend (backends/cupti.py) passes every field: the defaults here are its values
// (SCRATCH_BYTES, HARDWARE_BYTES, BUFFER_PCS, FLAGTREE_PROFILER_PCSAMPLING_INTERVAL's 12).
struct PcSamplingOptions {
  uint32_t period = 12;                   // log2 of cycles between samples, 5..31; 0: CUPTI's default
  bool serialized = false;                // kernel-serialized mode: exact launch per sample
  // range=session: one sampling range per context from its first launch to finalize (or a module
  // unload), no per-launch sync/Start/Stop; continuous-mode samples are then per function.
  bool sessionRange = true;
  size_t scratchBytes = 16u << 20;        // CUPTI's buffer of decoded PC records
  size_t hardwareBytes = 32u << 20;       // the device buffer samples land in (CUPTI's default: 512 MiB)
  size_t bufferPcs = 20000;               // PC records fetched per GetData call
};

struct PcSamplingStats {
  uint64_t totalSamples = 0;       // CUPTI's count: all samples, user kernels or not
  uint64_t droppedSamples = 0;     // lost by the hardware (buffer overflow)
  uint64_t nonUserSamples = 0;     // in CUPTI's own kernels: no PC records
  uint64_t getDataCalls = 0;
  uint64_t unknownReasonSamples = 0;
  uint64_t linesWithoutSource = 0;  // (function, pc) with no line info in a known cubin
  uint64_t unknownCubins = 0;       // cubins never seen at module load
  double unattributedSamples = 0;   // continuous mode: no launch of the function in the session
  bool hardwareBufferFull = false;
  uint32_t contexts = 0;
  uint32_t failedContexts = 0;
  uint64_t sampledLaunches = 0;
  uint64_t unsampledLaunches = 0;   // launched while another thread's launch was being sampled
  uint64_t errors = 0;              // CUPTI calls that failed inside launch callbacks
  std::string firstError;
  std::string range;                // "launch" | "session"
  std::string attribution;          // how samples reach launches, for the metadata
  std::vector<std::string> stallReasons;  // metric names collected
  // Where a session's fixed cost goes (metadata pcsampling_*_s), host ns:
  uint64_t enableNs = 0;   // Enable + stall-reason query + configuration, per context
  uint64_t startNs = 0;    // the sync before each range + Start
  uint64_t stopNs = 0;     // Stop + GetData (+ Disable at finish)
  uint64_t linesNs = 0;    // SASS-to-source look-ups of the sampled PCs
};

class PcSampler : public TracerObserver {
 public:
  static PcSampler& instance();

  // Starts sampling for session `slot`, loading the entry points from `handle`; contexts are
  // enabled at their first launch. Throws std::runtime_error.
  void start(int slot, void* handle, const std::string& libraryName, const PcSamplingOptions& options);
  // Stops sampling on every context and fetches what is left; returns the CRCs of sampled cubins
  // not seen yet (their modules loaded before the session: the caller may addCubin them).
  std::vector<uint64_t> stop();
  // stop() if not done, then resolves lines and attaches the samples to the session's launches.
  PcSamplingStats finish();
  bool running() const { return slot_ >= 0; }
  // A cubin whose module loaded before the session (e.g. Triton's, compiled earlier).
  void addCubin(const void* cubin, size_t size);

  void onLaunchEnter(uint32_t correlation, uint32_t cbid, const void* cbData) override;
  void onLaunchExit(uint32_t correlation, uint32_t cbid, const void* cbData) override;
  void onModuleLoaded(const void* cubin, size_t size) override { addCubin(cubin, size); }
  void onModuleUnloading(const void* cubin, size_t size) override;
  void onContextCreated(void* context) override;
  void onContextDestroying(void* context) override;
  // The launch path without CUPTI's callback data (host-side tests): enter/exit of the
  // outermost launch call of a thread in `context`.
  void launchEnter(uint32_t correlation, void* context);
  void launchExit(uint32_t correlation, const char* function);

 private:
  struct ContextState {
    CUcontext context = nullptr;
    CUpti_PCSamplingData data{};
    std::vector<CUpti_PCSamplingPCData> pcs;
    std::vector<CUpti_PCSamplingStallReason> stalls;  // pcs.size() x reasons
    std::vector<uint32_t> reasonIndices;             // collected reasons
    bool failed = false;                             // Enable/configure failed: never sampled
    bool rangeOpen = false;                          // range=session: Started, not yet Stopped
  };

  friend PcSampler& leaked<PcSampler>();
  PcSampler() = default;
  void check(const char* what, CUptiResult result) const;
  ContextState* stateFor(CUcontext context);
  void enableOn(ContextState& state);
  void noteError(const std::exception& e);
  void configure(ContextState& state);
  void readStallReasons(ContextState& state);
  void drain(ContextState& state, uint32_t launch = 0);
  void drainAll();
  void takeBuffer(ContextState& state, uint32_t launch);
  void stopActive();
  void startRange(ContextState& state, bool sync = true);
  void stopRange(ContextState& state, uint32_t launch);
  void closeSessionRanges();
  void stopContext(ContextState& state);
  void stopLocked();
  uint32_t lineOf(uint64_t crc, uint32_t function, uint64_t pc);

  PcSamplingApi api_;
  PcSamplingOptions options_;
  int slot_ = -1;
  bool stopped_ = false;  // stop() ran for this session: finish() only builds
  std::string stopError_;
  std::mutex mutex_;
  std::vector<ContextState*> contexts_;
  PcSamples samples_;
  PcSamplingStats stats_;
  std::map<uint64_t, std::string> cubins_;  // crc -> cubin bytes
  std::map<std::tuple<uint64_t, uint32_t, uint64_t>, uint32_t> lines_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> launches_;  // function -> correlations
  ContextState* active_ = nullptr;   // the context whose launch is being sampled now
  uint32_t activeLaunch_ = 0;        // that launch's correlation id
};

}  // namespace ftp
