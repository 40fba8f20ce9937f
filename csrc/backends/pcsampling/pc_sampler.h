// PC sampling for one session at a time. At the first launch in a context: Enable + one
// configuration call. Then one of two ranges:
//   range=session (the default, backends/cupti.py): Start once per context at its first launch,
//     Stop + fetch at finalize and module unload (the next launch starts a new range); no
//     per-launch cost, continuous-mode samples per function.
//   range=launch, in the order Triton's Proton uses: at every launch ENTER cuCtxSynchronize then
//     Start, at EXIT Stop then GetData until no PC remains. Every launch is thereby sampled alone
//     (serialized with the work before it) and its samples carry its correlation id. Samples are aggregated here, resolved to source lines once per
// (cubin, function, pc) from the cubins seen at module load, and attached to kernel nodes.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/activity/tracer_observer.h"
#include "backends/pcsampling/pc_marker.h"
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
  // range=session, continuous: contexts stay enabled between sessions with CUPTI's start/stop
  // control off (sampling never stops), so that a session pays neither Enable nor Start/Stop;
  // finalize syncs, runs the end marker (pc_marker.h) and reads until its samples come.
  // Released by releaseKept().
  bool keepEnabled = false;
  uint32_t workerSleepMs = 0;             // CUPTI's worker-thread period; 0: its default (100 ms)
  // keepEnabled: no marker samples this long after the sync (or no marker at all): the context
  // is disabled instead, which hands over everything (and is enabled afresh next session).
  uint32_t settleMaxMs = 1000;
  // keepEnabled: once the marker's samples come, reading goes on until nothing new has come for
  // this long: CUPTI's workers hand batches over out of order (the H200 once gave 255 of the
  // marker's samples before the last 17,000 of the kernel before it).
  uint32_t settleQuietMs = 15;
};

struct PcSamplingStats {
  uint64_t totalSamples = 0;       // CUPTI's count: all samples, user kernels or not
  uint64_t takenSamples = 0;       // the samples of the PC records taken (stall reasons summed)
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
  // Where a session's fixed cost goes (metadata pcsampling_*_s; issue 18 item 3), host ns:
  uint64_t enableNs = 0;   // Enable + stall-reason query + configuration, per context
  uint64_t startNs = 0;    // the sync before each range + Start
  uint64_t stopNs = 0;     // Stop + GetData (+ Disable at finish)
  uint64_t linesNs = 0;    // SASS-to-source look-ups of the sampled PCs
  uint64_t settleNs = 0;   // keepEnabled: the sync and the reads until the decoder went quiet
  uint64_t lastArrivalNs = 0;    // keepEnabled: after the sync, when the last new samples came
  uint64_t firstArrivalNs = 0;   // keepEnabled: ... and the first (0: none came)
  uint64_t longestGapNs = 0;     // keepEnabled: the longest wait between two arrivals
  uint64_t firstReadSamples = 0; // keepEnabled: samples the first read after the sync returned
  uint64_t discardedSamples = 0; // keepEnabled: taken between sessions, thrown away at start
  uint64_t markerSamples = 0;    // keepEnabled: the end marker's own, never attributed
  uint64_t settleFallbacks = 0;  // keepEnabled: contexts disabled because the marker did not come
  // keepEnabled: samples read at this session's first launch while no kernel ran since the last
  // session: decoded after that session was written (lost to it; the backend warns).
  uint64_t lateSamples = 0;
  bool reusedContexts = false;   // keepEnabled: the contexts were enabled by an earlier session
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
  // Contexts kept enabled from earlier sessions (keepEnabled): whether there are any.
  bool keepsContexts();
  // Disables the contexts kept enabled (another tool may sample then); false while a session
  // samples. The tracer calls it before it lets go of CUPTI (onTracerStopping).
  bool releaseKept();
  // Tests without a GPU: what runs instead of the end marker kernel (true: it ran).
  void setMarkerStandIn(bool (*launch)()) { markerStandIn_ = launch; }
  // A cubin whose module loaded before the session (e.g. Triton's, compiled earlier).
  void addCubin(const void* cubin, size_t size);

  void onLaunchEnter(uint32_t correlation, uint32_t cbid, const void* cbData) override;
  void onLaunchExit(uint32_t correlation, uint32_t cbid, const void* cbData) override;
  void onModuleLoaded(const void* cubin, size_t size) override { addCubin(cubin, size); }
  void onModuleUnloading(const void* cubin, size_t size) override;
  void onContextDestroying(void* context) override;
  void onTracerStopping() override { releaseKept(); }
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
    uint64_t session = 0;                            // keepEnabled: the session it was synced for
    PcMarkerCache marker;                            // keepEnabled: the end marker's module
    bool markerSeen = false;                         // its samples came since it was launched
  };

  friend PcSampler& leaked<PcSampler>();
  PcSampler() = default;
  void check(const char* what, CUptiResult result) const;
  ContextState* stateFor(CUcontext context);
  void enableOn(ContextState& state);
  void noteError(const std::exception& e);
  void configure(ContextState& state);
  void readStallReasons(ContextState& state);
  // keep=false: what is read belongs to no session (counted in discardedSamples, dropped).
  void drain(ContextState& state, uint32_t launch = 0, bool keep = true);
  void drainAll(bool keep = true);
  void takeBuffer(ContextState& state, uint32_t launch, bool keep = true);
  void stopActive();
  void startRange(ContextState& state);
  void stopRange(ContextState& state, uint32_t launch);
  void closeSessionRanges();
  void stopContext(ContextState& state, bool keep = true);
  void stopLocked();
  bool settle(ContextState& state);
  void discardBacklog();
  void releaseKeptLocked();
  uint32_t lineOf(uint64_t crc, uint32_t function, uint64_t pc);

  PcSamplingApi api_;
  PcSamplingOptions options_;
  int slot_ = -1;
  uint64_t sessionSerial_ = 0;  // counts start(): which session a kept context last joined
  uint64_t idleMark_ = 0;       // the tracer's idle-discarded records when the last session ended
  // Launches seen between sampled sessions (other sessions' launches; the observer stays while
  // contexts are kept): with idleMark_, whether any kernel ran since the last session.
  std::atomic<uint64_t> outsideLaunches_{0};
  uint64_t outsideMark_ = 0;
  bool stopped_ = false;  // stop() ran for this session: finish() only builds
  std::string stopError_;
  std::mutex mutex_;
  std::vector<ContextState*> contexts_;
  PcSamples samples_;
  PcSamplingStats stats_;
  std::map<uint64_t, std::string> cubins_;  // crc -> cubin bytes
  std::map<std::tuple<uint64_t, uint32_t, uint64_t>, uint32_t> lines_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> launches_;  // function -> correlations
  bool (*markerStandIn_)() = nullptr;
  ContextState* active_ = nullptr;   // the context whose launch is being sampled now
  uint32_t activeLaunch_ = 0;        // that launch's correlation id
};

}  // namespace ftp
