// The CUPTI instance of the shared tracer: CUPTI's callback selection and resource callbacks
// (the rest is the shared template, instantiated here).
#include "backends/nvidia/cupti_tracer.h"

#include <cstring>

#include "backends/dialect/dialect_tracer_impl.h"
#include "backends/nvidia/cuda_driver.h"
#include "backends/nvidia/idle_release.h"
#include "context/thread_state.h"
#include "session/profiler.h"

namespace ftp {
namespace {

const char* const kTracedPrefixes[] = {"cuLaunch",   "cuGraphLaunch",   "cuMemcpy",   "cuMemset",
                                       "cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset"};

void onGraphResource(const CuptiApi& api, CUpti_CallbackId cbid, const void* data) {
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) return;
  const auto* resource = static_cast<const CUpti_ResourceData*>(data);
  const auto* graph = resource ? static_cast<const CUpti_GraphData*>(resource->resourceDescriptor) : nullptr;
  if (!graph || !graph->node || !api.getGraphNodeId) return;
  uint64_t node = 0;
  if (api.getGraphNodeId(graph->node, &node) != CUPTI_SUCCESS || !node) return;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    // Inside a traced launch call, the node is that launch being captured (stream capture);
    // nodes added with the explicit graph API have no launch, hence no context.
    const ThreadState& ts = threadState();
    if (ts.apiDepth > 0 && ts.apiCorrelation) Profiler::instance().onGraphNodeCreated(ts.apiCorrelation, node);
    return;
  }
  uint64_t original = 0;
  if (graph->originalNode && api.getGraphNodeId(graph->originalNode, &original) == CUPTI_SUCCESS && original)
    Profiler::instance().onGraphNodeCloned(node, original);
}

}  // namespace

template class DialectTracer<CuptiDialect>;

void CuptiDialect::selectCallbacks(const Api& api, std::vector<TracedCallback<Domain, CallbackId>>& out) {
  struct LaunchDomain {
    Domain id;
    uint32_t size;
  };
  for (LaunchDomain d : {LaunchDomain{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE},
                         LaunchDomain{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE}}) {
    // Headers newer than the library may name ids it does not know: their name look-up fails.
    for (uint32_t cbid = 1; cbid < d.size; ++cbid) {
      const char* name = nullptr;
      if (!api.getCallbackName || api.getCallbackName(d.id, cbid, &name) != CUPTI_SUCCESS || !name) continue;
      if (!tracedCallName(name, kTracedPrefixes, std::size(kTracedPrefixes))) continue;
      out.push_back({d.id, cbid, std::strstr(name, "GraphLaunch") != nullptr});
    }
  }
}

void CuptiDialect::enableExtraCallbacks(const Api& api, Subscriber subscriber) {
  if (api.getGraphNodeId) {
    // Graph nodes made by captured launches (and their clones at instantiation) carry the
    // launch's context to the kernels the graph replays.
    for (CallbackId cbid : {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED})
      api.enableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid);
  }
  // Module and context events are rare; observers (PC sampling, counters) need them.
  for (CallbackId cbid : {CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
                          CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING})
    api.enableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid);
}

void CuptiDialect::armSuspend(double seconds) { armIdleRelease(seconds); }

void CuptiDialect::cancelSuspend() { cancelIdleRelease(); }

void CuptiDialect::synchronize(const std::vector<Context>& contexts) {
  for (CUcontext c : contexts) CudaDriver::instance().synchronize(c);
}

void CuptiDialect::onOtherCallback(DialectTracer<CuptiDialect>& tracer, Domain, CallbackId cbid, Payload data) {
  const auto* resource = static_cast<const CUpti_ResourceData*>(data);
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_MODULE_LOADED:
    case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING: {
      const auto* module = resource ? static_cast<const CUpti_ModuleResourceData*>(resource->resourceDescriptor) : nullptr;
      if (!module || !tracer.hasObservers()) return;
      const bool loaded = cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED;
      tracer.notifyObservers([&](TracerObserver& o) {
        if (loaded) o.onModuleLoaded(module->pCubin, module->cubinSize);
        else o.onModuleUnloading(module->pCubin, module->cubinSize);
      });
      return;
    }
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
      if (!resource || !tracer.hasObservers()) return;
      void* context = resource->context;
      const bool created = cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED;
      tracer.notifyObservers([&](TracerObserver& o) {
        if (created) o.onContextCreated(context);
        else o.onContextDestroying(context);
      });
      return;
    }
    default:
      onGraphResource(tracer.api(), cbid, data);
  }
}

}  // namespace ftp
