// PcSampler's handlers of the tracer's module and context events (tracer_observer.h).
#include <stdexcept>

#include "backends/pcsampling/pc_sampler.h"

namespace ftp {

// A context created while a session samples (the program's first CUDA call, e.g. torch's first
// op, creates it inside that launch call, whose launch callback saw no context yet): enabled here,
// and with range=session its range opened, so that the kernel of that very call is sampled.
void PcSampler::onContextCreated(void* context) {
  if (slot_ < 0 || !context) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot_ < 0 || stopped_) return;
  ContextState* state = stateFor(static_cast<CUcontext>(context));
  if (!state || !options_.sessionRange || state->rangeOpen) return;
  try {
    startRange(*state, /*sync=*/false);
  } catch (const std::exception& e) {
    noteError(e);  // never throw into the vendor's callback
  }
}

void PcSampler::onModuleUnloading(const void* cubin, size_t size) {
  // Continuous mode needs a fetch between a module's unload and a reload (cupti_pcsampling.h).
  addCubin(cubin, size);
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot_ < 0) return;
  try {
    closeSessionRanges();  // range=session: samples of the unloading module must be read now
    drainAll();
  } catch (const std::exception& e) {
    noteError(e);
  }
}

void PcSampler::onContextDestroying(void* context) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < contexts_.size(); ++i) {
    if (contexts_[i]->context != context) continue;
    try {
      stopContext(*contexts_[i]);
    } catch (const std::exception&) {
    }
    delete contexts_[i];
    contexts_.erase(contexts_.begin() + long(i));
    return;
  }
}

}  // namespace ftp
