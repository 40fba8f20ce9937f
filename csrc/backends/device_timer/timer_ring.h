// backend="device_timer": the ring of per-launch records that stamped Triton kernels write.
//
// Device memory is (1 + kLanes) planes of `slots` x 16 bytes. Launch number `seq` owns slot
// seq % slots in every plane; the kernel gets the address of its slot in plane 0 and finds the
// others at fixed multiples of the plane size (baked into its code at compile time):
//   plane 0      {kernel id, grid x, grid y | grid z << 16, block x}, stored by block (0,0,0);
//   plane 1 + l  {~start, end}: every block leader does an atomic max of the complement of its
//                entry time, every warp an atomic max of its exit time, into lane l = SM id % kLanes
//                (lanes spread the atomics of a many-block kernel over several addresses).
// A zero-filled slot needs no initialisation per launch: max(~t) is the earliest t. Slots are
// zeroed again on the device after each readback, on the copy stream.
//
// Host side, per launch (claim), on the launching thread: one lock, the slot's bookkeeping and
// the launch's context (as for a CUPTI launch callback), kept in the slot (slot_launches.h).
// Readback: once `batch` slots are known to be queued on the device, the ring orders its copy
// stream after the launch streams (events), copies the slots to pinned memory and zeroes them;
// a worker thread waits for the copy and hands one DeviceRecord per launch to the profiler. A
// full ring waits for the oldest readback (backpressure, counted); nothing is dropped. Launches
// captured into CUDA graphs are timed per replay through the graph area (graph_area.h).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backends/device_timer/slot_launches.h"

namespace ftp {

// 32 lanes: the exit stamps of a many-block kernel (one atomic per warp) queue on their lane's
// address; fewer lanes slowed such kernels measurably (docs/reference/device-timer.md).
constexpr uint32_t kTimerLanes = 32;
constexpr uint32_t kTimerSlotBytes = 16;
constexpr uint32_t kTimerPlanes = 1 + kTimerLanes;
// The profile-scratch alignment our stamped kernels ask for: the allocator hands a ring slot only
// to a launch asking for it (any other profile-scratch request goes to the previous allocator).
// A multiple of 16, so that another tool's allocator rounding an address up to it (when that
// tool replaced ours) returns an even address, which the stamps do not write through.
// A new tag with every change to what the stamps write (and a new compiler mode, compiler_hook.py).
constexpr uint32_t kTimerAlignTag = 0x44540040u;
// The tags of kernels stamped by earlier versions (still in Triton's or inductor's disk caches),
// whose stamps write another layout or skip only a null pointer: they get a null pointer
// (counted, never given scratch to write). 0x44540010: stamps without the pointer's mark;
// 0x44540020: graph replays numbered by block leaders' tickets; 0x44540030: replay records with
// their lane rows side by side.
constexpr uint32_t kRetiredTimerAlignTags[] = {0x44540010u, 0x44540020u, 0x44540030u};
inline bool retiredTimerAlignTag(uint64_t tag) {
  for (uint32_t retired : kRetiredTimerAlignTags)
    if (tag == retired) return true;
  return false;
}
// Bit 0 of every pointer the ring hands a stamped kernel (ring slots and graph descriptors are
// 16-aligned). The stamps write only through a pointer carrying it: scratch that another tool's
// profile allocator returned for our tag is never written.
constexpr uint64_t kSlotMark = 1;

// What the ring needs from a device (CUDA, or the host stand-in of the CPU tests).
class RingDevice {
 public:
  virtual ~RingDevice() = default;
  virtual uint64_t deviceBase() = 0;        // kTimerPlanes planes of the ring's slots
  virtual const uint8_t* hostMirror() = 0;  // the pinned copy, same layout
  // Whether the calling thread launches on the ring's device (a ring address is valid there):
  // its current context is the ring's (kYes), another (kNo), or none yet (kNoContext).
  enum Where { kNo = 0, kYes = 1, kNoContext = 2 };
  virtual Where onRingDevice() = 0;
  // True when `stream` is capturing a graph (a captured launch would keep its slot forever).
  virtual bool capturing(uint64_t stream) = 0;
  // Orders the copy stream after everything queued so far on `streams` (those that fail, being
  // gone, are removed from the vector).
  virtual void waitForStreams(std::vector<uint64_t>& streams) = 0;
  // Queues on the copy stream: slots [first, first + count) of every plane to the mirror, then
  // zeroes them on the device; returns a fence to wait for.
  virtual void* copyAndZero(uint32_t first, uint32_t count) = 0;
  virtual void waitFence(void* fence) = 0;  // blocks until done; the fence is released
  // The graph area (graph_area.h): `bytes` of zeroed device memory, 256-aligned, or 0 when there
  // is none to have. Legal during a capture (the only call here that may happen in one).
  virtual uint64_t allocGraphChunk(uint64_t bytes) = 0;
  // Orders the caller after everything queued on the device so far; false when it cannot.
  virtual bool syncDevice() = 0;
  virtual void readDevice(uint64_t address, void* host, uint64_t bytes) = 0;  // a copy, waited for
};

// Device timestamps to the host monotonic clock: host = device - offset.
struct ClockMap {
  int64_t offsetNs = 0;
};

struct RingStats {
  uint64_t claimed = 0;        // launches that got a slot
  uint64_t delivered = 0;      // records handed to the profiler
  uint64_t untimed = 0;        // slots read back without stamps (a launch that did not run)
  uint64_t backpressure = 0;   // claims that waited for a readback (ring full)
  uint64_t readbacks = 0;
  uint64_t captured = 0;       // captured launches the full graph area could not take, not timed
  uint64_t otherDevice = 0;    // launches on another device than the ring's, not timed
  uint64_t unknownKernels = 0; // records whose kernel id has no registered name
  uint64_t idle = 0;           // launches while no device-timer session was active: no slot, stamps skip
};

struct GraphOptions {
  uint32_t records = 256;       // replay records per captured launch (R, a power of two)
  uint32_t nodesPerChunk = 64;  // descriptors per chunk of the graph area
  uint32_t maxChunks = 64;
};
class GraphArea;
struct GraphStats;

class TimerRing {
 public:
  TimerRing(std::unique_ptr<RingDevice> device, uint32_t slots, uint32_t batch, uint32_t deviceId, ClockMap clock,
            GraphOptions graphs = {});
  ~TimerRing();  // drains, then stops the worker
  TimerRing(const TimerRing&) = delete;
  TimerRing& operator=(const TimerRing&) = delete;

  // The allocator: the device address of a fresh slot for a launch on `stream` (a tagged pointer
  // to a graph descriptor when `stream` captures, graph_area.h), 0 when this launch cannot be
  // timed (another device, the graph area full) or while no device-timer session is active
  // (a captured launch still gets its descriptor: its replays may come in a session), or kFull
  // when the ring is full: then the
  // caller waits in awaitRoom() (without the GIL) and claims again. On the launching thread.
  // kNoContext: the thread has no current context yet (its first launch: Triton makes one
  // current after the allocator); the caller finds the thread's device and claims again.
  static constexpr uint64_t kFull = 1;
  static constexpr uint64_t kNoContext = 2;
  uint64_t claim(uint64_t stream);
  // Backpressure: schedules the oldest readbacks and waits until a slot is free (counted).
  void awaitRoom();
  // Deferred launches (hook="triton"): the launch's context and metadata are taken when Triton's
  // launch-exit hook calls launchDone(), after its enter hook published the metadata, instead of
  // in claim() (Triton asks the allocator before it runs the enter hook).
  void deferLaunches(bool on) { defer_.store(on, std::memory_order_relaxed); }
  static void launchDone();
  // A launch timed another way (event_launches.h) under `correlation`: its context taken now, or
  // at the launch-exit hook when launches are deferred, as for the ring's own.
  void announceLaunch(uint32_t correlation, uint64_t launchNs) { announceOrDefer(correlation, launchNs, 0); }
  // Delivers every record of launches claimed so far (treats every claim as queued), then the
  // graph replays run so far (a device-wide sync when graphs were captured); waits.
  void drain();
  // A readback of what is known to be queued, without waiting (flush's cheap half).
  void kick();
  RingStats stats();
  GraphStats graphStats();
  uint32_t graphRecords() const;
  void countOtherDevice();  // a launch on another device than the ring's (not timed)
  void setClock(ClockMap clock);
  ClockMap clock();
  // A replay through torch of the graph captured under `label` (graph_replays.h), about to be
  // launched on `stream`: its context and stream, for its records.
  void noteGraphReplay(uint32_t label, uint64_t stream);
  uint32_t graphNodes(uint32_t label);  // descriptors claimed under a capture's label
  // The record's stream id of `stream` (the ring's numbering; its readbacks then wait for it too).
  uint16_t streamIndex(uint64_t stream);
  uint32_t deviceId() const { return deviceId_; }
  // A kernel launch on `stream` timed beside the slots (CUDA events, a scoped kernel's buffers),
  // its times on the host clock already: its record handed to the profiler as the slots' are.
  void deliverTimed(uint32_t correlation, uint32_t name, uint64_t stream, uint64_t startNs, uint64_t endNs,
                    const int32_t grid[3], const int32_t block[3]);
  uint32_t slots() const { return slots_; }
  uint32_t batch() const { return batch_; }
  uint64_t planeBytes() const { return uint64_t(slots_) * kTimerSlotBytes; }

  // Kernel ids (a hash of the name, stamped into plane 0) -> interned names.
  static uint32_t kernelId(const char* name, size_t size);
  static void nameKernel(uint32_t id, uint32_t internedName);

 private:
  struct ThreadEntry {
    uint64_t pending = 0;  // 1 + the latest claim of this thread (its launch may not be queued yet)
    uint64_t claimNs = 0;
  };
  struct SlotInfo {
    uint32_t correlation;
    uint16_t stream;
  };
  struct Readback {
    uint64_t first, last;  // sequence numbers [first, last)
    std::vector<void*> fences;
  };

  // Registers the launch now, or at Triton's launch-exit hook when launches are deferred.
  void announceOrDefer(uint32_t correlation, uint64_t launchNs, uint64_t graphNode);
  // Launch `seq`'s context, resolved now on the launching thread, kept in its slot.
  void publishLaunch(uint64_t seq, uint64_t launchNs);
  uint64_t frontierLocked(uint64_t now, bool all);
  void scheduleLocked(uint64_t upTo);
  void markQueuedLocked();
  uint16_t streamIndexLocked(uint64_t stream);
  uint64_t claimCaptured(uint64_t stream, uint64_t now);
  void work();
  void deliver(uint64_t first, uint64_t last);

  // What a claim reads before and after taking the lock, on a cache line apart from the lock
  // (which the worker takes too): a line shared with it came back from the worker's core at
  // nearly every claim.
  std::atomic<bool> defer_{false};
  std::atomic<uint64_t> idle_{0};  // RingStats::idle, counted without the lock
  std::unique_ptr<RingDevice> device_;
  const uint64_t base_;  // device_->deviceBase(), fixed for the ring's life
  const uint32_t slots_, batch_, deviceId_;
  alignas(64) std::mutex mutex_;
  std::condition_variable workCv_, freedCv_;
  uint64_t next_ = 0, scheduled_ = 0, freed_ = 0;
  std::deque<Readback> queue_;
  bool stopping_ = false;
  std::vector<SlotInfo> info_;
  SlotLaunches launches_;  // each slot's launch context, until its record is delivered
  std::unordered_map<uint32_t, ThreadEntry> threads_;  // by thread id
  std::vector<uint64_t> streams_;                      // every stream launched on (events)
  std::unordered_map<uint64_t, uint16_t> streamIds_;
  uint64_t lastStream_ = ~0ull;
  uint16_t lastStreamId_ = 0;
  RingStats stats_;
  ClockMap clock_;
  std::unique_ptr<GraphArea> graphs_;
  std::thread worker_;
};

}  // namespace ftp
