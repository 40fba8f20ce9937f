// What other CUPTI-dialect features (PC sampling, hardware counters) learn from the tracer's
// callbacks. The vendor library allows one subscriber per process, so the tracer owns it and
// passes these events on instead of each feature subscribing.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ftp {

struct TracerObserver {
  virtual ~TracerObserver() = default;
  // Around the outermost launch call of a thread (the call whose correlation id the kernel's
  // activity record carries). `cbData` is the vendor's CUpti_CallbackData.
  virtual void onLaunchEnter(uint32_t correlation, uint32_t cbid, const void* cbData) {}
  virtual void onLaunchExit(uint32_t correlation, uint32_t cbid, const void* cbData) {}
  // A module (cubin) was loaded, or is about to be unloaded.
  virtual void onModuleLoaded(const void* cubin, size_t size) {}
  virtual void onModuleUnloading(const void* cubin, size_t size) {}
  // A context (CUcontext) was created, or is about to be destroyed.
  virtual void onContextCreated(void* context) {}
  virtual void onContextDestroying(void* context) {}
};

}  // namespace ftp
