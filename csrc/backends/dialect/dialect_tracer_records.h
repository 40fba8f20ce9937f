// DialectTracer: the launch path (API callbacks) and the record path (activity buffers), the
// two hot paths. Every dialect hook here is a static inline call (see dialect_tracer.h).
// Included through dialect_tracer_impl.h only.
#pragma once
#include <cstdlib>

#include "backends/dialect/dialect_tracer.h"
#include "context/thread_state.h"
#include "session/profiler.h"

namespace ftp {

template <typename D>
void DialectTracer<D>::onApi(void* userdata, typename D::Domain domain, typename D::CallbackId cbid,
                             typename D::Payload data) {
  auto* self = static_cast<DialectTracer*>(userdata);
#ifdef FLAGTREE_PROFILER_TESTING
  if (self->floor_) return;  // the benchmark floor: an empty callback
#endif
  if (!D::isLaunchDomain(domain)) {
    D::onOtherCallback(*self, domain, cbid, data);
    return;
  }
  const auto* cb = D::callbackData(data);
  ThreadState& ts = threadState();
  if (D::isExit(cb)) {
    if (ts.apiDepth > 0 && --ts.apiDepth == 0) {
      const uint32_t correlation = ts.apiCorrelation;
      ts.apiCorrelation = 0;
      if constexpr (NotesCallbackTimes<D>::value) D::noteExit(correlation);
      if constexpr (D::kExternalCorrelation) D::launchExit();
      if (self->hasObservers())
        self->notifyObservers([&](TracerObserver& o) { o.onLaunchExit(correlation, uint32_t(cbid), cb); });
    }
    return;
  }
  // A runtime launch may reach the driver's launch inside it: the kernel carries the outer
  // call's correlation id, so only the outermost call is recorded. A depth left from a call
  // whose exit never came (the callbacks went off while it ran) is not nesting.
  const uint32_t epoch = self->callbackEpoch_.load(std::memory_order_relaxed);
  if (ts.apiDepth > 0 && ts.apiEpoch != epoch) ts.apiDepth = 0;
  if (ts.apiDepth++ > 0) return;
  ts.apiEpoch = epoch;
  if constexpr (D::kFlushOnceAtStop) {
    if (!self->launchedSinceFlush_.load(std::memory_order_relaxed))
      self->launchedSinceFlush_.store(true, std::memory_order_relaxed);
  }
  // Dialects whose callbacks carry no usable correlation id key launches on ids of their own
  // (0: inside a launch already entered through Triton's hook, which the kernel belongs to).
  uint32_t correlation = 0;
  if constexpr (D::kExternalCorrelation) correlation = D::launchEnter(uint32_t(cbid));
  else correlation = D::correlation(cb);
  ts.apiCorrelation = correlation;
  if (D::kExternalCorrelation && correlation == 0) return;
  if constexpr (D::kKeepAttached) {
    // The first traced launch after a resume: records of older launches (made while parked)
    // are discarded from here on. A plain load first: the exchange is a locked write.
    uint32_t parkedMark = kMaxCorrelation;
    if (self->keepFrom_.load(std::memory_order_relaxed) == kMaxCorrelation)
      self->keepFrom_.compare_exchange_strong(parkedMark, correlation, std::memory_order_relaxed);
  }
  const auto& graph = domain == D::kDriverDomain ? self->multiDriver_ : self->multiRuntime_;
  const bool multi = size_t(cbid) < graph.size() && graph[cbid];
  if constexpr (NotesCallbackTimes<D>::value) D::noteEnter(correlation);
  Profiler::instance().onLaunch(correlation, multi);
  self->noteContext(D::context(cb));
  if (self->hasObservers())
    self->notifyObservers([&](TracerObserver& o) { o.onLaunchEnter(correlation, uint32_t(cbid), cb); });
}

template <typename D>
void DialectTracer<D>::onBufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  DialectTracer& self = instance();
  const size_t limit = self.bufferLimit_.load(std::memory_order_relaxed);
  if (limit && self.held_.load() + self.bufferBytes_ > limit) {
    self.declined_.fetch_add(1);
    *buffer = nullptr;
    *size = 0;
    *maxRecords = 0;
    return;
  }
  self.held_.fetch_add(self.bufferBytes_);
  *size = self.bufferBytes_;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, self.bufferBytes_));
  *maxRecords = 0;
}

template <typename D>
void DialectTracer<D>::onBufferCompletedIn(Context context, uint32_t streamId, uint8_t* buffer, size_t size,
                                           size_t validSize) {
  instance().bufferDone(context, streamId, buffer, size, validSize);
}

template <typename D>
void DialectTracer<D>::onBufferCompleted(uint8_t* buffer, size_t size, size_t validSize) {
  // No context or stream: the dropped count asked for is the library's global one.
  instance().bufferDone(Context{}, 0, buffer, size, validSize);
}

template <typename D>
void DialectTracer<D>::bufferDone(Context context, uint32_t streamId, uint8_t* buffer, size_t size,
                                  size_t validSize) {
  const bool unread = D::kFlushOnceAtStop && tornDown_.load(std::memory_order_relaxed);
  if (unread && buffer && validSize > 0) afterTeardown_.fetch_add(1);
  if (buffer && validSize > 0 && !floor_ && !unread) handleBuffer(buffer, validSize);
  size_t dropped = 0;
  // Drops while parked belong to no session.
  const bool idle = keepFrom_.load(std::memory_order_relaxed) == kMaxCorrelation;
  if (api_.getNumDropped && api_.getNumDropped(context, streamId, &dropped) == D::kSuccess && !idle)
    dropped_.fetch_add(dropped);
  if (buffer) {
    size_t held = held_.load();
    while (!held_.compare_exchange_weak(held, held >= size ? held - size : 0)) {
    }
  }
  std::free(buffer);
}

template <typename D>
void DialectTracer<D>::handleBuffer(uint8_t* buffer, size_t validSize) {
  Profiler& profiler = Profiler::instance();
  typename D::Record* record = nullptr;
  DecodeContext context{clockOffset_, kernelNames_, counters_, buffer + validSize, clockFit_};
  typename D::Result rc;
  while ((rc = api_.getNextRecord(buffer, validSize, &record)) == D::kSuccess) {
    DeviceRecord out;
    out.deviceType = deviceType_;
    if (D::decode(record, out, context) != Decoded::Record) continue;
    if constexpr (D::kKeepAttached) {
      if (!keepRecord(out.correlation)) continue;
    }
    if constexpr (D::kExternalCorrelation) {
      if (!D::joinRecord(out)) continue;  // held until the stop (see backends/cann/external_join.h)
    }
    profiler.onRecord(out);
  }
  if constexpr (ThreadCursor<D>::value) {
    // A walk that ended early (a kind the library does not know) left the library's per-thread
    // position mid-buffer; a walk over no bytes puts it back to the start.
    if (rc != D::kEndOfBuffer) api_.getNextRecord(buffer, 0, &record);
  }
}

}  // namespace ftp
