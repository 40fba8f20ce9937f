#include "backends/device_timer/graph_walk.h"

#include "core/library.h"

namespace ftp {

namespace {

// Child graphs cannot form a cycle (a graph is copied into its child node); the bound only keeps
// a broken handle from recursing without end.
constexpr int kMaxDepth = 64;

std::string failed(const char* call, CUresult result) {
  return std::string(call) + " failed (error " + std::to_string(int(result)) + ")";
}

// The kernel node's name: its CUfunction's, or its CUkernel's (a library-loaded kernel), else
// kUnnamedKernel.
std::string kernelName(const GraphWalkApi& api, CUgraphNode node) {
  CUfunction func = nullptr;
  CUkernel kern = nullptr;
  if (api.kernelParamsV2) {
    CUDA_KERNEL_NODE_PARAMS_v2 params{};
    if (api.kernelParamsV2(node, &params) != CUDA_SUCCESS) return kUnnamedKernel;
    func = params.func;
    kern = params.kern;
  } else if (api.kernelParamsV1) {
    CUDA_KERNEL_NODE_PARAMS_v1 params{};
    if (api.kernelParamsV1(node, &params) != CUDA_SUCCESS) return kUnnamedKernel;
    func = params.func;
  }
  const char* name = nullptr;
  if (func && api.funcGetName && api.funcGetName(&name, func) == CUDA_SUCCESS && name) return name;
  if (kern && api.kernelGetName && api.kernelGetName(&name, kern) == CUDA_SUCCESS && name) return name;
  return kUnnamedKernel;
}

void walk(const GraphWalkApi& api, CUgraph graph, int depth, GraphKernels& out) {
  if (depth > kMaxDepth) {
    out.error = "child graphs nested deeper than " + std::to_string(kMaxDepth);
    return;
  }
  size_t count = 0;
  CUresult result = api.getNodes(graph, nullptr, &count);
  if (result != CUDA_SUCCESS) {
    out.error = failed("cuGraphGetNodes", result);
    return;
  }
  std::vector<CUgraphNode> nodes(count);
  if (count && (result = api.getNodes(graph, nodes.data(), &count)) != CUDA_SUCCESS) {
    out.error = failed("cuGraphGetNodes", result);
    return;
  }
  nodes.resize(count);
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    if ((result = api.nodeGetType(node, &type)) != CUDA_SUCCESS) {
      out.error = failed("cuGraphNodeGetType", result);
      return;
    }
    if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
      out.names.push_back(kernelName(api, node));
    } else if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph child = nullptr;
      if ((result = api.childGraph(node, &child)) != CUDA_SUCCESS) {
        out.error = failed("cuGraphChildGraphNodeGetGraph", result);
        return;
      }
      walk(api, child, depth + 1, out);
      if (!out.error.empty()) return;
    }
  }
}

}  // namespace

const GraphWalkApi& graphWalkApi() {
  static const GraphWalkApi api = [] {
    const std::string path = "libcuda.so.1";
    GraphWalkApi a;
    resolveSymbols(openLibrary(path), path, "cu",
                   {{a.getNodes, "GraphGetNodes", Need::Required},
                    {a.nodeGetType, "GraphNodeGetType", Need::Required},
                    {a.childGraph, "GraphChildGraphNodeGetGraph", Need::Required},
                    {a.kernelParamsV2, "GraphKernelNodeGetParams_v2", Need::Optional},
                    {a.kernelParamsV1, "GraphKernelNodeGetParams", Need::Optional},
                    {a.funcGetName, "FuncGetName", Need::Optional},
                    {a.kernelGetName, "KernelGetName", Need::Optional}},
                   " (backend 'device_timer' lists the kernels of CUDA graphs captured before its ring)");
    return a;
  }();
  return api;
}

GraphKernels graphKernelNames(const GraphWalkApi& api, CUgraph graph) {
  GraphKernels out;
  walk(api, graph, 0, out);
  return out;
}

}  // namespace ftp
