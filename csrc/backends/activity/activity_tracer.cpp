#include "backends/activity/activity_tracer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "backends/nvidia/cuda_driver.h"
#include "context/thread_state.h"
#include "core/clock.h"
#include "core/strings.h"
#include "session/profiler.h"

namespace ftp {
namespace {

// Calls whose correlation ids reach kernels, copies and sets. Matched by name so that the
// list holds across library versions, whose numeric callback ids differ.
const char* const kTracedPrefixes[] = {"cuLaunch",   "cuGraphLaunch",   "cuMemcpy",   "cuMemset",
                                       "cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset"};

bool isTraced(const char* name) {
  if (std::strstr(name, "HostFunc")) return false;  // host callbacks run no device work
  for (const char* prefix : kTracedPrefixes)
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

const char* copyKindName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    default: return "memcpy";
  }
}

}  // namespace

ActivityTracer& ActivityTracer::instance() {
  static ActivityTracer* tracer = new ActivityTracer();
  return *tracer;
}

void ActivityTracer::acquire(const ActivityApi& api, size_t bufferBytes, DeviceType deviceType) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ > 0) {
    ++users_;
    return;
  }
  api_ = api;
  bufferBytes_ = bufferBytes;
  deviceType_ = deviceType;
  start();
  users_ = 1;
}

void ActivityTracer::startFloor(const ActivityApi& api, size_t bufferBytes, bool emptyCallbacks) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ > 0) throw std::runtime_error("the CUPTI floor needs the tracer to itself; finalize sessions first");
  api_ = api;
  bufferBytes_ = bufferBytes;
  floor_ = true;
  CUptiResult rc = api_.subscribe(&subscriber_, &ActivityTracer::onApi, this);
  if (rc != CUPTI_SUCCESS) throw std::runtime_error("cannot subscribe to " + api_.path + ": " + api_.describe(rc));
  if (emptyCallbacks) enableApiCallbacks();
  api_.registerCallbacks(&ActivityTracer::onBufferRequested, &ActivityTracer::onBufferCompleted);
  api_.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  users_ = 1;
}

void ActivityTracer::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ == 0) return;
  if (--users_ == 0) stop();
}

void ActivityTracer::start() {
  CUptiResult rc = api_.subscribe(&subscriber_, &ActivityTracer::onApi, this);
  if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    throw SubscriberTaken(
        "another CUPTI client already holds the profiling slot (torch.profiler, Nsight Systems, "
        "Triton's proton, a second copy of libcupti, or a tool that stopped without "
        "cuptiFinalize); stop it before starting this session. Library: " + api_.path);
  }
  if (rc != CUPTI_SUCCESS)
    throw std::runtime_error("cannot subscribe to " + api_.path + ": " + api_.describe(rc));
  api_.getVersion(&version_);
  enableApiCallbacks();
  if (api_.getGraphNodeId) {
    // Graph nodes made by captured launches (and their clones at instantiation) carry the
    // launch's context to the kernels the graph replays.
    for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED})
      api_.enableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
  }
  // Module and context events are rare; observers (PC sampling, counters) need them.
  for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
                                CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING})
    api_.enableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
  rc = api_.registerCallbacks(&ActivityTracer::onBufferRequested, &ActivityTracer::onBufferCompleted);
  if (rc != CUPTI_SUCCESS) {
    api_.unsubscribe(subscriber_);
    throw std::runtime_error("cannot register activity buffers with " + api_.path + ": " + api_.describe(rc));
  }
  uint64_t vendorNow = 0;
  api_.getTimestamp(&vendorNow);
  clockOffset_ = int64_t(vendorNow) - int64_t(monotonicNs());
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMSET}) {
    rc = api_.enable(kind);
    if (rc != CUPTI_SUCCESS) {
      api_.unsubscribe(subscriber_);
      throw std::runtime_error("cannot enable activity kind " + std::to_string(int(kind)) + " in " +
                               api_.path + ": " + api_.describe(rc));
    }
  }
}

void ActivityTracer::enableApiCallbacks() {
  struct Domain {
    CUpti_CallbackDomain id;
    uint32_t size;
    std::vector<uint8_t>* graph;
  };
  // Which ids to trace depends only on the library, so it is worked out once per library
  // (a few thousand name look-ups) and reused by every later session.
  if (tracedFor_ != api_.path) {
    traced_.clear();
    for (Domain d : {Domain{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, &graphDriver_},
                     Domain{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, &graphRuntime_}}) {
      // Headers newer than the library may name ids it does not know: their name look-up fails.
      d.graph->assign(d.size + 1, 0);
      for (uint32_t cbid = 1; cbid < d.size; ++cbid) {
        const char* name = nullptr;
        if (!api_.getCallbackName || api_.getCallbackName(d.id, cbid, &name) != CUPTI_SUCCESS || !name)
          continue;
        if (!isTraced(name)) continue;
        (*d.graph)[cbid] = std::strstr(name, "GraphLaunch") != nullptr;
        traced_.emplace_back(d.id, cbid);
      }
    }
    tracedFor_ = api_.path;
  }
  for (const auto& t : traced_) api_.enableCallback(1, subscriber_, t.first, t.second);
}

void ActivityTracer::setKernelActivityKind(CUpti_ActivityKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ == 0 || kind == kernelKind_) return;
  api_.disable(kernelKind_);  // the two kernel kinds are not meant to be enabled together
  CUptiResult rc = api_.enable(kind);
  if (rc != CUPTI_SUCCESS) {
    api_.enable(kernelKind_);
    throw std::runtime_error("cannot enable activity kind " + std::to_string(int(kind)) + " in " + api_.path +
                             ": " + api_.describe(rc));
  }
  kernelKind_ = kind;
}

void ActivityTracer::stop() {
  flushLocked();
  if (kernelKind_ != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {  // set by setKernelActivityKind
    api_.disable(kernelKind_);
    kernelKind_ = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  }
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMSET})
    api_.disable(kind);
  api_.flushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  collectDropped();
  api_.unsubscribe(subscriber_);
  subscriber_ = nullptr;
  // Finalizing releases the library fully, so that another tool (or a later session) can attach.
  if (api_.finalize) api_.finalize();
  floor_ = false;
  std::lock_guard<std::mutex> lock(contextsMutex_);
  contexts_.clear();
}

void ActivityTracer::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_ > 0) flushLocked();
}

void ActivityTracer::flushLocked() {
  std::vector<CUcontext> contexts;
  {
    std::lock_guard<std::mutex> lock(contextsMutex_);
    contexts = contexts_;
  }
  for (CUcontext c : contexts) CudaDriver::instance().synchronize(c);
  api_.flushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  collectDropped();
}

void ActivityTracer::collectDropped() {
  // Records dropped while no buffer completed (every request declined) are only seen here:
  // the global queue's count (context NULL) since the last read.
  size_t dropped = 0;
  if (api_.getNumDropped && api_.getNumDropped(nullptr, 0, &dropped) == CUPTI_SUCCESS) dropped_.fetch_add(dropped);
}

void ActivityTracer::noteContext(CUcontext context) {
  static thread_local CUcontext last = nullptr;
  if (context == last || !context) return;
  last = context;
  std::lock_guard<std::mutex> lock(contextsMutex_);
  for (CUcontext c : contexts_)
    if (c == context) return;
  contexts_.push_back(context);
}

void CUPTIAPI ActivityTracer::onApi(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                    const void* data) {
  auto* self = static_cast<ActivityTracer*>(userdata);
  if (self->floor_) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    self->onResource(cbid, data);
    return;
  }
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  ThreadState& ts = threadState();
  if (cb->callbackSite == CUPTI_API_EXIT) {
    if (ts.apiDepth > 0 && --ts.apiDepth == 0) {
      const uint32_t correlation = ts.apiCorrelation;
      ts.apiCorrelation = 0;
      if (self->hasObservers_.load(std::memory_order_acquire))
        self->notifyObservers([&](TracerObserver& o) { o.onLaunchExit(correlation, cbid, data); });
    }
    return;
  }
  // A runtime launch may reach the driver's launch inside it: the kernel carries the outer
  // call's correlation id, so only the outermost call is recorded.
  if (ts.apiDepth++ > 0) return;
  ts.apiCorrelation = cb->correlationId;
  const auto& graph = domain == CUPTI_CB_DOMAIN_DRIVER_API ? self->graphDriver_ : self->graphRuntime_;
  bool multi = cbid < graph.size() && graph[cbid];
  Profiler::instance().onLaunch(cb->correlationId, multi);
  self->noteContext(cb->context);
  if (self->hasObservers_.load(std::memory_order_acquire))
    self->notifyObservers([&](TracerObserver& o) { o.onLaunchEnter(cb->correlationId, cbid, data); });
}

void ActivityTracer::addObserver(TracerObserver* observer) {
  std::lock_guard<std::mutex> lock(observersMutex_);
  observers_.push_back(observer);
  hasObservers_.store(true, std::memory_order_release);
}

void ActivityTracer::removeObserver(TracerObserver* observer) {
  std::lock_guard<std::mutex> lock(observersMutex_);
  observers_.erase(std::remove(observers_.begin(), observers_.end(), observer), observers_.end());
  hasObservers_.store(!observers_.empty(), std::memory_order_release);
}

template <typename F>
void ActivityTracer::notifyObservers(F&& f) {
  std::lock_guard<std::mutex> lock(observersMutex_);
  for (TracerObserver* o : observers_) f(*o);
}

void ActivityTracer::onResource(CUpti_CallbackId cbid, const void* data) {
  const auto* resource = static_cast<const CUpti_ResourceData*>(data);
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_MODULE_LOADED:
    case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING: {
      const auto* module = resource ? static_cast<const CUpti_ModuleResourceData*>(resource->resourceDescriptor) : nullptr;
      if (!module || !hasObservers_.load(std::memory_order_acquire)) return;
      const bool loaded = cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED;
      notifyObservers([&](TracerObserver& o) {
        if (loaded) o.onModuleLoaded(module->pCubin, module->cubinSize);
        else o.onModuleUnloading(module->pCubin, module->cubinSize);
      });
      return;
    }
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
      if (!resource || !hasObservers_.load(std::memory_order_acquire)) return;
      void* context = resource->context;
      const bool created = cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED;
      notifyObservers([&](TracerObserver& o) {
        if (created) o.onContextCreated(context);
        else o.onContextDestroying(context);
      });
      return;
    }
    default:
      onGraphResource(cbid, data);
  }
}

void ActivityTracer::onGraphResource(CUpti_CallbackId cbid, const void* data) {
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) return;
  const auto* resource = static_cast<const CUpti_ResourceData*>(data);
  const auto* graph = resource ? static_cast<const CUpti_GraphData*>(resource->resourceDescriptor) : nullptr;
  if (!graph || !graph->node || !api_.getGraphNodeId) return;
  uint64_t node = 0;
  if (api_.getGraphNodeId(graph->node, &node) != CUPTI_SUCCESS || !node) return;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    // Inside a traced launch call, the node is that launch being captured (stream capture);
    // nodes added with the explicit graph API have no launch, hence no context.
    const ThreadState& ts = threadState();
    if (ts.apiDepth > 0 && ts.apiCorrelation) Profiler::instance().onGraphNodeCreated(ts.apiCorrelation, node);
    return;
  }
  uint64_t original = 0;
  if (graph->originalNode && api_.getGraphNodeId(graph->originalNode, &original) == CUPTI_SUCCESS && original)
    Profiler::instance().onGraphNodeCloned(node, original);
}

void CUPTIAPI ActivityTracer::onBufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  ActivityTracer& self = instance();
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

void CUPTIAPI ActivityTracer::onBufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer,
                                                size_t size, size_t validSize) {
  ActivityTracer& self = instance();
  if (buffer && validSize > 0 && !self.floor_) self.handleBuffer(buffer, validSize);
  size_t dropped = 0;
  if (self.api_.getNumDropped && self.api_.getNumDropped(context, streamId, &dropped) == CUPTI_SUCCESS)
    self.dropped_.fetch_add(dropped);
  if (buffer) {
    size_t held = self.held_.load();
    while (!self.held_.compare_exchange_weak(held, held >= size ? held - size : 0)) {
    }
  }
  std::free(buffer);
}

void ActivityTracer::convertKernel(const CUpti_Activity* record, DeviceRecord& out) {
  // The Kernel9 layout: its leading fields are the same in every later record version the
  // library may write (checked against CUPTI 12 and 13 headers).
  const auto* k = reinterpret_cast<const CUpti_ActivityKernel9*>(record);
  out.kind = RecordKind::Kernel;
  out.correlation = k->correlationId;
  out.deviceId = k->deviceId;
  out.streamId = k->streamId;
  out.startNs = k->start - clockOffset_;
  out.endNs = k->end - clockOffset_;
  out.grid[0] = k->gridX, out.grid[1] = k->gridY, out.grid[2] = k->gridZ;
  out.block[0] = k->blockX, out.block[1] = k->blockY, out.block[2] = k->blockZ;
  out.registers = k->registersPerThread;
  out.staticSharedMemory = k->staticSharedMemory;
  out.dynamicSharedMemory = k->dynamicSharedMemory;
  out.graphNodeId = k->graphNodeId;  // same offset in Kernel9..10 (checked against CUPTI 12, 13)
  kernelNames_.assign(k->name, out);
}

template <typename Record>
void ActivityTracer::convertTransfer(const Record& m, RecordKind kind, uint32_t name, DeviceRecord& out) {
  out.kind = kind;
  out.correlation = m.correlationId;
  out.deviceId = m.deviceId;
  out.streamId = m.streamId;
  out.startNs = m.start - clockOffset_;
  out.endNs = m.end - clockOffset_;
  out.bytes = m.bytes;
  out.graphNodeId = m.graphNodeId;
  out.name = name;
}

void ActivityTracer::handleBuffer(uint8_t* buffer, size_t validSize) {
  Profiler& profiler = Profiler::instance();
  CUpti_Activity* record = nullptr;
  static const uint32_t memsetName = intern("memset");
  while (api_.getNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    DeviceRecord out;
    out.deviceType = deviceType_;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        convertKernel(record, out);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        // Memcpy5: its fields are at the same offsets in Memcpy6 and 7 (CUPTI 13 headers).
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy5*>(record);
        convertTransfer(*m, RecordKind::Memcpy, intern(copyKindName(m->copyKind)), out);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET:
        convertTransfer(*reinterpret_cast<const CUpti_ActivityMemset4*>(record), RecordKind::Memset,
                        memsetName, out);
        break;
      default:
        continue;
    }
    profiler.onRecord(out);
  }
}

}  // namespace ftp
