"""Replays of CUDA graphs captured before the device timer's ring started (unseen_graphs.py): each
graph's kernel nodes listed once through the driver's graph functions (a stand-in of them that
keeps node types, child graphs and function names: csrc/backends/device_timer/graph_walk_bindings.cpp),
each replay counted by Triton kernel name, a graph whose capture the wrapper saw left to its
descriptors, and the replay as a whole timed by events on the ring's host stand-in."""
import dataclasses
import sys
import types
import warnings

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends.device_timer import event_timed, graph_replays, unseen_graphs, untimed
from flagtree.profiler.triton_glue import kernels as triton_kernels
from support.device_timer_ring import allocate
from support.profiles import metrics_by_path
from test_launch_sight import _kernel, _meta, _tree
from test_launch_sight import device  # noqa: F401 (the stand-in target's fixture, used by graph_route)

T = _native.testing
DT = _native.device_timer
CAPTURE_STREAM = 0x7777
MEMCPY, MEMSET = 1, 2  # CU_GRAPH_NODE_TYPE_MEMCPY, _MEMSET
NOT_KEPT = "You cannot access the raw cudaGraph_t instance unless CUDAGraph was initialized with keep_graph=true"


class DriverGraph:
    """torch.cuda.CUDAGraph as far as the wrapper and the walk use it: the driver's graph
    (the stand-in's nodes) behind raw_cuda_graph() when kept, a replay that runs it."""

    def __init__(self, nodes, keep_graph=True, duration_ns=0):
        self.handle = T.device_timer_host_graph(nodes)
        self.keep_graph, self.duration, self.ran = keep_graph, duration_ns, 0

    def capture_begin(self, *args, **kwargs):
        T.device_timer_host_capturing(CAPTURE_STREAM, True)

    def capture_end(self):
        T.device_timer_host_capturing(CAPTURE_STREAM, False)

    def replay(self):
        self.ran += 1
        T.device_timer_host_event_advance(self.duration)  # the device's time of the replay

    def raw_cuda_graph(self):
        if not self.keep_graph:
            raise RuntimeError(NOT_KEPT)
        return self.handle


@pytest.fixture
def driver():
    T.device_timer_host_graph_driver(True)
    yield
    T.device_timer_host_graph_driver(False)


@pytest.fixture
def graphs(driver):
    """A fresh graph class (its instances made before `wrap` are captures the ring did not see)
    and wrap(unseen): the class wrapped as the backend wraps torch.cuda.CUDAGraph."""
    cls = type("Graph", (DriverGraph,), {})

    def wrap(unseen):
        graph_replays.install(_native, cls, stream_of=lambda graph: 0x5000, unseen=unseen)

    yield cls, wrap
    graph_replays.uninstall()


def test_the_walk_lists_kernel_nodes_of_child_graphs_and_skips_other_nodes(driver):
    handle = T.device_timer_host_graph(["a", MEMCPY, ["b", [MEMSET, "a"]], None])
    assert DT.device_timer_graph_kernel_names(handle) == (["a", "b", "a", "unnamed kernel"], "")


def test_a_driver_without_cufuncgetname_gives_unnamed_kernels_through_the_old_entry():
    T.device_timer_host_graph_driver(True, names=False, v2=False)
    try:
        handle = T.device_timer_host_graph(["a", ["b"]])
        assert DT.device_timer_graph_kernel_names(handle) == (["unnamed kernel"] * 2, "")
    finally:
        T.device_timer_host_graph_driver(False)


def test_a_failing_node_query_is_reported_with_what_was_listed():
    T.device_timer_host_graph_driver(True, fail_after=1)
    try:
        names, error = DT.device_timer_graph_kernel_names(T.device_timer_host_graph(["a", "b"]))
        assert names == ["a"] and error.startswith("cuGraphNodeGetType failed")
    finally:
        T.device_timer_host_graph_driver(False)


def _session_stats(launches, start):
    stats = launches.session_stats(start)
    launches.uninstall()
    return stats


def test_replays_of_a_graph_captured_before_the_ring_are_counted_by_triton_kernel(ring, allocator, graphs):
    cls, wrap = graphs
    ring(64, 16)
    before = cls(["tri_a", ["tri_b", "tri_a", MEMCPY], "ampere_sgemm"])  # captured before the ring
    launches = untimed.UntimedLaunches()
    launches.graphs.names = lambda: {"tri_a", "tri_b"}  # the Triton kernels alive
    launches.install()
    wrap(launches.graphs)
    seen = cls(["tri_a"])
    seen.capture_begin()  # captured through the wrapper: labelled, its replays are its descriptors'
    allocate(CAPTURE_STREAM)
    seen.capture_end()
    start = launches.snapshot()
    walks = []
    listing = launches.graphs._kernel_nodes
    launches.graphs._kernel_nodes = lambda graph: walks.append(graph) or listing(graph)
    for _ in range(100):
        before.replay()
        seen.replay()
    stats = _session_stats(launches, start)
    assert before.ran == 100 and seen.ran == 100 and walks == [before]  # listed once
    assert stats["device_timer_not_timed_kernels"] == {
        "tri_a": {"launches": 200, "reason": unseen_graphs.REASON},
        "tri_b": {"launches": 100, "reason": unseen_graphs.REASON}}
    assert stats["device_timer_launches_not_timed"] == 300
    assert stats["device_timer_graph_replays_unseen"] == 100  # the labelled graph's are not among them
    assert stats["device_timer_graph_other_kernels_unseen"] == 100 and stats["device_timer_graph_replays_unlisted"] == 0
    session = types.SimpleNamespace(metadata_path="p.meta.json")
    with pytest.warns(RuntimeWarning, match=r"300 launches of 2 Triton kernels got no device time: tri_a \(200\), "
                                            r"tri_b \(100\)"):
        untimed.warn_untimed(stats, session)


def test_a_graph_torch_kept_no_cuda_graph_of_is_counted_as_replays_with_the_reason(ring, allocator, graphs):
    cls, wrap = graphs
    ring(64, 16)
    graph = cls(["tri_a"], keep_graph=False)  # torch's default, and inductor's
    launches = untimed.UntimedLaunches()
    launches.graphs.names = lambda: {"tri_a"}
    launches.install()
    wrap(launches.graphs)
    start = launches.snapshot()
    for _ in range(7):
        graph.replay()
    stats = _session_stats(launches, start)
    assert stats["device_timer_not_timed_kernels"] == {}
    assert stats["device_timer_graph_replays_unseen"] == stats["device_timer_graph_replays_unlisted"] == 7
    assert "keep_graph=False" in stats["device_timer_graph_unlisted_reason"] and NOT_KEPT in stats[
        "device_timer_graph_unlisted_reason"]
    session = types.SimpleNamespace(metadata_path="p.meta.json")
    with pytest.warns(RuntimeWarning, match=r"7 replays of CUDA graphs captured before .* not counted by kernel "
                                            r"\(torch kept no cudaGraph_t.*nor timed.*arm the route before it "
                                            r"\(arm_device_timer\(\)"):
        unseen_graphs.warn_unlisted(stats, session, lambda text: warnings.warn(text, RuntimeWarning))


def test_a_graph_captured_again_while_the_ring_runs_is_left_to_its_descriptors(ring, allocator, graphs):
    cls, wrap = graphs
    ring(64, 16)
    graph = cls(["tri_a"])
    unseen = unseen_graphs.UnseenGraphs(names=lambda: {"tri_a"})
    wrap(unseen)
    graph.replay()
    graph.capture_begin()  # reset and captured again: seen now
    allocate(CAPTURE_STREAM)
    graph.capture_end()
    graph.replay()
    assert unseen.counts()["kernels"] == {"tri_a": 1} and not hasattr(graph, unseen_graphs.ATTR)


def test_a_graph_captured_through_the_wrapper_without_a_timed_launch_is_counted_as_unseen(ring, allocator, graphs):
    """Captured while the ring runs but between sessions (as torch.compile's cudagraph trees
    capture at warm-up): its kernels took no descriptor, so its replays are counted by kernel
    name, not left to descriptors that do not exist."""
    cls, wrap = graphs
    ring(64, 16)
    unseen = unseen_graphs.UnseenGraphs(names=lambda: {"tri_a"})
    wrap(unseen)
    graph = cls(["tri_a"])
    graph.capture_begin()  # no launch in it asks the ring for a slot
    graph.capture_end()
    for _ in range(3):
        graph.replay()
    assert unseen.counts()["kernels"] == {"tri_a": 3} and unseen.counts()["replays"] == 3
    timed = cls(["tri_a"])
    timed.capture_begin()
    allocate(CAPTURE_STREAM)  # a stamped launch: a descriptor of the capture's label
    timed.capture_end()
    timed.replay()
    assert unseen.counts()["replays"] == 3  # left to its descriptor


def test_each_replay_is_timed_as_a_whole_under_the_replay_context(tmp_path, ring, allocator, graphs):
    cls, wrap = graphs
    ring(64, 16)
    graph = cls(["tri_a", "tri_b"], duration_ns=3_000)
    DT.device_timer_events_start(event_timed.EVENT_PAIRS)
    unseen = unseen_graphs.UnseenGraphs(names=lambda: {"tri_a", "tri_b"})
    unseen.events = event_timed.EventTimed(_native)
    wrap(unseen)
    T.device_timer_host_event_clock(5_000_000_000)
    try:
        sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
        with profiler.scope("replays"):
            for _ in range(20):
                graph.replay()
        DT.device_timer_events_drain()
        profiler.finalize(sid)
    finally:
        T.device_timer_host_event_clock(0)
    node = metrics_by_path(tmp_path / "p.hatchet")[("replays", unseen_graphs.REPLAY_NAME)]
    assert (node["count"], node["time (ns)"]) == (20, 20 * 3_000)
    timed, untimed_here = event_timed.session_stats(unseen.events.counts(), {})
    assert timed == {unseen_graphs.REPLAY_NAME: {"launches": 20, "reason": unseen_graphs.REPLAY_TIMED}}
    assert untimed_here == {} and unseen.counts()["kernels"] == {"tri_a": 20, "tri_b": 20}


def test_triton_kernel_names_come_from_the_compiled_and_statically_launched_kernels_alive(monkeypatch):
    compiled = type("CompiledKernel", (), {})
    static = type("StaticallyLaunchedCudaKernel", (), {})
    monkeypatch.setitem(sys.modules, "triton.compiler.compiler", types.SimpleNamespace(CompiledKernel=compiled))
    monkeypatch.setitem(sys.modules, "torch._inductor.runtime.static_triton_launcher",
                        types.SimpleNamespace(StaticallyLaunchedCudaKernel=static))
    alive = [compiled(), static(), compiled()]
    alive[0].name, alive[1].name, alive[2].name = "triton_poi_fused_0", "triton_red_fused_1", None
    assert triton_kernels.triton_kernel_names() == {"triton_poi_fused_0", "triton_red_fused_1"}
    del alive


@pytest.fixture
def graph_route(device, driver, monkeypatch):
    """The backend on the stand-in target (test_launch_sight's `device`) with a graph path, its
    replay wrapper on a fresh graph class in place of torch.cuda.CUDAGraph."""
    from flagtree.profiler.backends import get_backend
    from flagtree.profiler.backends.device_timer import route

    found = route.route_support

    def with_graphs():
        support = found()
        return dataclasses.replace(support, stamper=dataclasses.replace(support.stamper, times_graph_replays=True))

    cls = type("Graph", (DriverGraph,), {})
    monkeypatch.setattr(route, "route_support", with_graphs)
    monkeypatch.setattr(graph_replays, "graph_class", lambda: cls)
    monkeypatch.setattr(graph_replays, "_stream_of", lambda graph: 0x5000)  # torch's current stream, on CUDA
    yield cls
    get_backend("device_timer").free()  # the ring and the wrapper


def test_a_session_counts_and_times_replays_of_a_graph_captured_before_its_ring(tmp_path, graph_route):
    kernel = _kernel(tmp_path)  # a Triton kernel alive in the process (the graph's kernels' names)
    graph = graph_route(["add_kernel", [MEMSET, "add_kernel"], "cublas_gemm"], duration_ns=4_000)
    T.device_timer_host_event_clock(5_000_000_000)
    try:
        sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode="events=on")
        with profiler.scope("replays"):
            for _ in range(30):
                graph.replay()
        with pytest.warns(RuntimeWarning) as caught:
            profiler.finalize(sid)
    finally:
        T.device_timer_host_event_clock(0)
    meta = _meta(tmp_path)
    assert meta["device_timer_not_timed_kernels"] == {"add_kernel": {"launches": 60, "reason": unseen_graphs.REASON}}
    assert meta["device_timer_graph_replays_unseen"] == 30 and meta["device_timer_graph_other_kernels_unseen"] == 30
    assert meta["device_timer_event_timed_kernels"][unseen_graphs.REPLAY_NAME]["launches"] == 30
    node = _tree(tmp_path)[("replays", unseen_graphs.REPLAY_NAME)]
    assert (node["count"], node["time (ns)"]) == (30, 30 * 4_000)
    assert any("60 launches of 1 Triton kernels got no device time: add_kernel (60)" in str(w.message) for w in caught)
    assert kernel.name == "add_kernel"
