// The shared machinery of CUPTI-dialect backends: API callbacks on the launch, copy and set
// calls (the launch path), activity buffers turned into DeviceRecords (the record path),
// flushing, and dropped-record accounting. One tracer per process: the vendor library allows
// one subscriber.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/activity/activity_api.h"
#include "backends/activity/tracer_observer.h"
#include "data/kernel_names.h"
#include "data/records.h"

namespace ftp {

class ActivityTracer {
 public:
  static ActivityTracer& instance();

  // Starts tracing on the first call and counts users; throws std::runtime_error with a message
  // naming the problem (e.g. another tool holding the subscriber slot).
  void acquire(const ActivityApi& api, size_t bufferBytes, DeviceType deviceType);
  // The benchmark's "CUPTI floor": the least any CUPTI-based profiler costs. Kernel activity
  // only, records discarded; with `emptyCallbacks`, an empty callback on each launch call too.
  void startFloor(const ActivityApi& api, size_t bufferBytes, bool emptyCallbacks);
  // Ends tracing when the last user releases it (final flush included).
  void release();
  // Waits for queued device work and delivers every buffered record.
  void flush();
  bool running() const { return users_ > 0; }
  uint64_t droppedRecords() const { return dropped_.load(); }
  // Most bytes of activity buffers handed to the library and not yet returned (0: no limit).
  // A request past it is declined, and the library drops (and counts) what it cannot store.
  void setBufferLimit(size_t bytes) { bufferLimit_.store(bytes); }
  uint64_t declinedBuffers() const { return declined_.load(); }
  uint32_t libraryVersion() const { return version_; }
  const std::string& libraryPath() const { return api_.path; }
  // The loaded library's table and dlopen handle, for features that resolve more of its calls.
  const ActivityApi& api() const { return api_; }
  void* handle() const { return api_.handle; }

  // Observers get the launch, module and context callbacks (see tracer_observer.h). They may be
  // added before or while tracing; the caller keeps them alive until removed.
  void addObserver(TracerObserver* observer);
  void removeObserver(TracerObserver* observer);
  // Debugging knob of PC sampling: trace kernels as CUPTI_ACTIVITY_KIND_KERNEL (serial) instead of
  // CONCURRENT_KERNEL while tracing (Proton does so when it samples). No-op when not tracing;
  // tracing stops with CONCURRENT_KERNEL restored. Throws if the library refuses the kind.
  void setKernelActivityKind(CUpti_ActivityKind kind);

 private:
  ActivityTracer() = default;
  void start();
  void stop();
  void flushLocked();
  void collectDropped();
  void enableApiCallbacks();
  void handleBuffer(uint8_t* buffer, size_t validSize);
  void convertKernel(const CUpti_Activity* record, DeviceRecord& out);
  template <typename Record>
  void convertTransfer(const Record& m, RecordKind kind, uint32_t name, DeviceRecord& out);
  void noteContext(CUcontext context);
  void onResource(CUpti_CallbackId cbid, const void* data);
  void onGraphResource(CUpti_CallbackId cbid, const void* data);
  template <typename F>
  void notifyObservers(F&& f);

  static void CUPTIAPI onApi(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void* data);
  static void CUPTIAPI onBufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords);
  static void CUPTIAPI onBufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer,
                                         size_t size, size_t validSize);

  std::mutex mutex_;  // start/stop/flush
  int users_ = 0;
  ActivityApi api_;
  DeviceType deviceType_ = DeviceType::CUDA;
  bool floor_ = false;  // see startFloor
  CUpti_ActivityKind kernelKind_ = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;  // see setKernelActivityKind
  size_t bufferBytes_ = 8 << 20;
  std::atomic<size_t> bufferLimit_{0};
  std::atomic<size_t> held_{0};  // bytes of buffers the library holds
  std::atomic<uint64_t> declined_{0};
  CUpti_SubscriberHandle subscriber_ = nullptr;
  uint32_t version_ = 0;
  int64_t clockOffset_ = 0;  // vendor timestamp minus host monotonic time
  std::atomic<uint64_t> dropped_{0};
  // Per domain: which callback ids are graph launches (several records share one id).
  std::vector<uint8_t> graphDriver_, graphRuntime_;
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> traced_;  // ids to enable
  std::string tracedFor_;  // the library traced_ was worked out for
  std::mutex contextsMutex_;
  std::vector<CUcontext> contexts_;
  KernelNames kernelNames_;
  std::mutex observersMutex_;
  std::vector<TracerObserver*> observers_;
  std::atomic<bool> hasObservers_{false};  // checked on every launch before taking the lock
};

}  // namespace ftp
