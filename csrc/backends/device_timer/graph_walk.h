// backend="device_timer": the kernel nodes of a CUDA graph, listed through the dlopen'd driver.
// A graph captured before the ring started replays kernels that carry no usable stamps; its
// replays are counted by kernel name instead (backends/device_timer/unseen_graphs.py), from the
// names listed here once per graph: cuGraphGetNodes, cuGraphNodeGetType, the kernel node's
// function (cuGraphKernelNodeGetParams, the _v2 entry where the driver has it) and its name
// (cuFuncGetName, CUDA 12.3 and later); child graph nodes are walked too.
#pragma once
#include <cuda.h>

#include <string>
#include <vector>

namespace ftp {

// The driver functions the walk uses. Only the node listing is required: a driver without the
// naming calls gives "unnamed kernel" (kUnnamedKernel), one without kernel parameters too.
struct GraphWalkApi {
  CUresult (*getNodes)(CUgraph, CUgraphNode*, size_t*) = nullptr;
  CUresult (*nodeGetType)(CUgraphNode, CUgraphNodeType*) = nullptr;
  CUresult (*childGraph)(CUgraphNode, CUgraph*) = nullptr;
  CUresult (*kernelParamsV2)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2*) = nullptr;
  CUresult (*kernelParamsV1)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1*) = nullptr;
  CUresult (*funcGetName)(const char**, CUfunction) = nullptr;
  CUresult (*kernelGetName)(const char**, CUkernel) = nullptr;
};

inline constexpr const char* kUnnamedKernel = "unnamed kernel";

// The process's libcuda's table (loaded once, as the ring loads the driver); throws
// LibraryNotFound when the driver lacks a required function.
const GraphWalkApi& graphWalkApi();

struct GraphKernels {
  std::vector<std::string> names;  // one per kernel node, child graphs included
  std::string error;               // non-empty: the walk failed (names holds what was listed)
};

// Lists the kernel nodes of `graph` and of the graphs nested in it.
GraphKernels graphKernelNames(const GraphWalkApi& api, CUgraph graph);

}  // namespace ftp
