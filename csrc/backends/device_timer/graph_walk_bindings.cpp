// backend="device_timer": the kernel nodes of a CUDA graph (graph_walk.h) as Python sees them,
// for replays of graphs captured before the ring started (backends/device_timer/unseen_graphs.py).
// The testing submodule swaps in a stand-in of the driver's graph functions: graphs of kernel,
// other and child-graph nodes built by the test, named or not.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backends/device_timer/device_timer_route.h"
#include "backends/device_timer/graph_walk.h"
#include "bindings/bindings.h"

namespace ftp {
namespace {

const GraphWalkApi* standIn = nullptr;  // the CPU tests' driver, when set

const GraphWalkApi& walkApi() { return standIn ? *standIn : graphWalkApi(); }

}  // namespace

void registerGraphWalkBindings(nb::module_& m) {
  // (kernel node names, error) of the cudaGraph_t at `graph`; LibraryNotFound without a driver.
  m.def("device_timer_graph_kernel_names", [](uint64_t graph) {
    const GraphWalkApi& api = walkApi();
    GraphKernels found;
    {
      nb::gil_scoped_release unlocked;
      found = graphKernelNames(api, reinterpret_cast<CUgraph>(graph));
    }
    return std::make_tuple(std::move(found.names), std::move(found.error));
  }, nb::arg("graph"));
}

#ifdef FLAGTREE_PROFILER_TESTING
namespace {

// What the driver keeps of a graph, as far as the walk reads it: each node's type, a kernel
// node's function (its name, or none: the driver cannot name it), a child node's graph.
struct FakeFunction {
  std::string name;
  bool named;
};
struct FakeGraph;
struct FakeNode {
  CUgraphNodeType type;
  FakeFunction* function = nullptr;
  FakeGraph* child = nullptr;
};
struct FakeGraph {
  std::vector<FakeNode*> nodes;
};

struct FakeDriver {
  std::deque<FakeFunction> functions;
  std::deque<FakeNode> nodes;
  std::deque<FakeGraph> graphs;
  GraphWalkApi api;
  int failAfter = -1;  // cuGraphNodeGetType calls that succeed before one fails (-1: none fails)
};

FakeDriver& fake() {
  static auto* driver = new FakeDriver();
  return *driver;
}

// cuGraphGetNodes: the count with no array; else up to *count nodes, the rest of the array
// null, *count the number written.
CUresult fakeGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  if (!graph || !count) return CUDA_ERROR_INVALID_VALUE;
  const auto& own = reinterpret_cast<FakeGraph*>(graph)->nodes;
  if (!nodes) {
    *count = own.size();
    return CUDA_SUCCESS;
  }
  size_t written = 0;
  for (; written < *count; ++written)
    nodes[written] = written < own.size() ? reinterpret_cast<CUgraphNode>(own[written]) : nullptr;
  *count = std::min(written, own.size());
  return CUDA_SUCCESS;
}

CUresult fakeNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  if (fake().failAfter == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (fake().failAfter > 0) --fake().failAfter;
  *type = reinterpret_cast<FakeNode*>(node)->type;
  return CUDA_SUCCESS;
}

CUresult fakeChildGraph(CUgraphNode node, CUgraph* graph) {
  auto* own = reinterpret_cast<FakeNode*>(node);
  if (own->type != CU_GRAPH_NODE_TYPE_GRAPH) return CUDA_ERROR_INVALID_VALUE;
  *graph = reinterpret_cast<CUgraph>(own->child);
  return CUDA_SUCCESS;
}

CUresult fakeKernelParamsV2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v2* params) {
  auto* own = reinterpret_cast<FakeNode*>(node);
  if (own->type != CU_GRAPH_NODE_TYPE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  *params = CUDA_KERNEL_NODE_PARAMS_v2{};
  params->func = reinterpret_cast<CUfunction>(own->function);
  return CUDA_SUCCESS;
}

CUresult fakeKernelParamsV1(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v1* params) {
  auto* own = reinterpret_cast<FakeNode*>(node);
  if (own->type != CU_GRAPH_NODE_TYPE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  *params = CUDA_KERNEL_NODE_PARAMS_v1{};
  params->func = reinterpret_cast<CUfunction>(own->function);
  return CUDA_SUCCESS;
}

CUresult fakeFuncGetName(const char** name, CUfunction function) {
  auto* own = reinterpret_cast<FakeFunction*>(function);
  if (!own || !own->named) return CUDA_ERROR_NOT_FOUND;
  *name = own->name.c_str();
  return CUDA_SUCCESS;
}

// A graph from its description: a str is a kernel node of that name, None a kernel node the
// driver cannot name, an int a node of that CUgraphNodeType, a list a child graph node.
FakeGraph* build(nb::handle spec) {
  FakeDriver& d = fake();
  FakeGraph& graph = d.graphs.emplace_back();
  for (nb::handle item : spec) {
    FakeNode& node = d.nodes.emplace_back();
    if (nb::isinstance<nb::list>(item)) {
      node.type = CU_GRAPH_NODE_TYPE_GRAPH;
      node.child = build(item);
    } else if (nb::isinstance<nb::int_>(item)) {
      node.type = static_cast<CUgraphNodeType>(nb::cast<int>(item));
    } else {
      node.type = CU_GRAPH_NODE_TYPE_KERNEL;
      const bool named = !item.is_none();
      node.function = &d.functions.emplace_back(FakeFunction{named ? nb::cast<std::string>(item) : "", named});
    }
    graph.nodes.push_back(&node);
  }
  return &graph;
}

}  // namespace

void registerGraphWalkTesting(nb::module_& testing) {
  testing.def("device_timer_host_graph", [](nb::list spec) { return reinterpret_cast<uint64_t>(build(spec)); },
              nb::arg("spec"));
  // The stand-in driver in place of libcuda's graph functions (`on` false: libcuda's again);
  // `names`: it has cuFuncGetName; `v2`: it has cuGraphKernelNodeGetParams_v2 (else the old entry).
  testing.def("device_timer_host_graph_driver", [](bool on, bool names, bool v2, int failAfter) {
    FakeDriver& d = fake();
    d.api = GraphWalkApi{};
    d.api.getNodes = fakeGetNodes;
    d.api.nodeGetType = fakeNodeGetType;
    d.api.childGraph = fakeChildGraph;
    if (v2) d.api.kernelParamsV2 = fakeKernelParamsV2; else d.api.kernelParamsV1 = fakeKernelParamsV1;
    if (names) d.api.funcGetName = fakeFuncGetName;
    d.failAfter = failAfter;
    standIn = on ? &d.api : nullptr;
  }, nb::arg("on"), nb::arg("names") = true, nb::arg("v2") = true, nb::arg("fail_after") = -1);
}
#else
void registerGraphWalkTesting(nb::module_&) {}
#endif  // FLAGTREE_PROFILER_TESTING

}  // namespace ftp
