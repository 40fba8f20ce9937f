"""CUDA-graph replays placed at their replay context on the device_timer backend, through the
ring's host stand-in: a graph class wrapped as torch.cuda.CUDAGraph is (graph_replays.py) labels
its capture and notes each replay; the ring's replay records (numbered by the descriptors'
tickets) are matched to the noted replays, so they land under replay context -> <captured_at>
-> capture path, on the stream replay() ran on. A graph also launched another way falls back to
the capture context, counted."""
import json

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends.device_timer import graph_replays
from support.device_timer_ring import allocate
from support.profiles import metrics_by_path
from test_graphs import _replay

T = _native.testing
DT = _native.device_timer
CAPTURE_STREAM = 0x7777
CAPTURED = "<captured_at>"


class HostGraph:
    """What torch.cuda.CUDAGraph does, over the host ring: the capture's launches claim tagged
    descriptors; a replay runs every captured kernel once (its stamps into its descriptor)."""

    def __init__(self, kernels):
        self.kernels = kernels  # (name, duration ns) per captured launch
        self.tagged = []
        self.stream = 0x5000
        self.clock = _native.core.monotonic_ns()

    def capture_begin(self, *args, **kwargs):
        T.device_timer_host_capturing(CAPTURE_STREAM, True)

    def capture_end(self):
        T.device_timer_host_capturing(CAPTURE_STREAM, False)

    def replay(self):
        self.launch()

    def launch(self):
        """The device side of one replay (also what a raw cudaGraphLaunch does)."""
        for name, duration in self.kernels:
            self.clock += 1_000
            _replay(self.tagged_of(name), name, self.clock, self.clock + duration)

    def tagged_of(self, name):
        return self.tagged[[n for n, _ in self.kernels].index(name)]

    def capture(self):
        """torch.cuda.graph(g): capture_begin, the model's launches, capture_end."""
        self.capture_begin()
        self.tagged = [allocate(CAPTURE_STREAM) for _ in self.kernels]
        self.capture_end()


@pytest.fixture
def wrapped():
    """A fresh HostGraph class wrapped as the backend wraps torch.cuda.CUDAGraph."""
    cls = type("Graph", (HostGraph,), {})
    graph_replays.install(_native, cls, stream_of=lambda graph: graph.stream)
    yield cls
    graph_replays.uninstall()


def _session(tmp_path, name="p", **kwargs):
    return profiler.start(str(tmp_path / name), backend="interpreter", **kwargs)


def test_replays_land_under_the_replay_context_then_the_capture_path(tmp_path, ring, allocator, wrapped):
    ring(64, 16)
    sid = _session(tmp_path)
    graph = wrapped([("k1", 100), ("k2", 150)])
    with profiler.scope("capture"):
        graph.capture()
    with profiler.scope("replays"):
        for _ in range(100):
            graph.replay()
    DT.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    under = ("replays", CAPTURED, "capture")
    assert tree[under + ("k1",)]["count"] == 100 and tree[under + ("k1",)]["time (ns)"] == 100 * 100
    assert tree[under + ("k2",)]["count"] == 100 and tree[under + ("k2",)]["time (ns)"] == 100 * 150
    assert ("capture", "k1") not in tree  # nothing under the capture context alone
    stats = DT.device_timer_stats()
    assert (stats["graph_replays_matched"], stats["graph_replays_unmatched"], stats["graph_replays_timed"]) == (200, 0, 200)
    for view, path in (("captured", ["capture", "k1"]), ("replayed", ["replays", "k1"])):  # the recorded tree, viewed
        assert profiler.read(tmp_path / "p.hatchet", metrics="count", graph_view=view).node(path).value("count") == 100


def test_replays_go_on_the_stream_replay_ran_on(tmp_path, ring, allocator, wrapped):
    ring(64, 16)
    sid = _session(tmp_path, data="trace")
    graph = wrapped([("k", 40)])
    graph.capture()
    for stream in (0x5000, 0x6000):  # an eager launch on each: the ring numbers the streams
        slot = allocate(stream)
        T.device_timer_host_meta(slot, DT.device_timer_name_kernel("eager"), (1, 1, 1), 32)
        T.device_timer_host_stamp(slot, 0, graph.clock, graph.clock + 5)
    for i in range(6):
        graph.stream = (0x5000, 0x6000)[i % 2]
        graph.replay()
    DT.device_timer_drain()
    profiler.finalize(sid)
    events = json.loads((tmp_path / "p.chrome_trace").read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    eager_rows = [e["tid"] for e in sorted((e for e in kernels if e["name"] == "eager"), key=lambda e: e["args"]["correlation"])]
    replays = sorted((e for e in kernels if e["name"] == "k"), key=lambda e: e["ts"])
    assert len(replays) == 6 and len(set(eager_rows)) == 2
    assert [e["tid"] for e in replays] == [eager_rows[i % 2] for i in range(6)]  # the launch's stream, not 65535
    assert len({e["args"]["correlation"] for e in replays}) == 6  # one graph launch each


def test_a_graph_also_launched_another_way_falls_back_to_the_capture_context(tmp_path, ring, allocator, wrapped):
    ring(64, 16)
    sid = _session(tmp_path)
    graph = wrapped([("k", 10)])
    with profiler.scope("capture"):
        graph.capture()
    with profiler.scope("replays"):
        for _ in range(3):
            graph.replay()
        graph.launch()  # a raw cudaGraphLaunch: not noted
        graph.launch()
    DT.device_timer_drain()
    with profiler.scope("replays"):
        graph.replay()  # the graph stays on the capture context from then on
    DT.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    assert tree[("capture", "k")]["count"] == 6 and not any(CAPTURED in path for path in tree)
    stats = DT.device_timer_stats()
    assert (stats["graph_replays_matched"], stats["graph_replays_unmatched"]) == (0, 6)


def test_replays_between_sessions_keep_the_later_replays_paired(tmp_path, ring, allocator, wrapped):
    ring(64, 16)
    first = _session(tmp_path, "first")
    graph = wrapped([("k", 10)])
    with profiler.scope("capture"):
        graph.capture()
    with profiler.scope("r1"):
        graph.replay()
        graph.replay()
    DT.device_timer_drain()  # the backend's finalize drains (the stand-in sessions do not)
    profiler.finalize(first)
    for _ in range(3):  # no session open: counted, nobody's
        graph.replay()
    second = _session(tmp_path, "second")
    with profiler.scope("r2"):
        for _ in range(4):
            graph.kernels = [("k", 20)]
            graph.replay()
    DT.device_timer_drain()
    profiler.finalize(second)
    assert metrics_by_path(tmp_path / "first.hatchet")[("r1", CAPTURED, "capture", "k")]["count"] == 2
    late = metrics_by_path(tmp_path / "second.hatchet")
    # the capture was the first session's: as on the nvidia backend, unknown to the second
    node = late[("r2", "<captured_at:unknown>", "k")]
    assert (node["count"], node["time (ns)"]) == (4, 4 * 20)
    assert sum(m.get("count", 0) for m in late.values()) == 4


def test_a_replay_made_while_the_session_is_deactivated_is_not_its(tmp_path, ring, allocator, wrapped):
    ring(64, 16)
    sid = _session(tmp_path)
    graph = wrapped([("k", 10)])
    graph.capture()
    profiler.deactivate(sid)
    graph.replay()
    profiler.activate(sid)
    graph.kernels = [("k", 30)]
    graph.replay()
    DT.device_timer_drain()
    profiler.finalize(sid)
    node = metrics_by_path(tmp_path / "p.hatchet")[(CAPTURED, "k")]
    assert (node["count"], node["time (ns)"]) == (1, 30)


def test_many_replays_read_back_in_several_drains_are_all_placed(tmp_path, ring, allocator, wrapped):
    ring(64, 16, graph_records=16)
    sid = _session(tmp_path)
    graph = wrapped([("a", 5), ("b", 7)])
    graph.capture()
    with profiler.scope("loop"):
        for i in range(300):
            graph.replay()
            if i % 10 == 9:  # within the 15 replays a descriptor keeps between readbacks
                DT.device_timer_drain()
    DT.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    assert tree[("loop", CAPTURED, "a")]["count"] == 300 and tree[("loop", CAPTURED, "b")]["time (ns)"] == 300 * 7
    stats = DT.device_timer_stats()
    assert stats["graph_replays_matched"] == 600 and stats["graph_replays_lost"] == 0


def test_a_replay_launch_forgotten_before_its_records_leaves_them_to_the_capture_context(tmp_path, ring, allocator,
                                                                                         wrapped):
    """flush_part forgets graph launches made before its flush; one whose readback was put off
    (a capture open elsewhere) has its records delivered later, under the capture context."""
    ring(64, 16)
    sid = _session(tmp_path)
    graph = wrapped([("k", 10)])
    with profiler.scope("capture"):
        graph.capture()
    with profiler.scope("replays"):
        graph.replay()
        graph.replay()
    assert _native.session.prune_graph_launches(_native.core.monotonic_ns()) == 2
    DT.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    assert tree[("capture", "k")]["count"] == 2 and tree[("capture", "k")]["time (ns)"] == 20
    stats = DT.device_timer_stats()
    assert (stats["graph_replays_matched"], stats["graph_replays_unmatched"]) == (0, 2)


def test_graphs_captured_without_the_wrapper_keep_the_capture_context(tmp_path, ring, allocator):
    ring(64, 16)
    sid = _session(tmp_path)
    graph = HostGraph([("k", 10)])  # not wrapped: a capture torch's wrapper did not see
    with profiler.scope("capture"):
        graph.capture()
    with profiler.scope("replays"):
        graph.replay()
    DT.device_timer_drain()
    profiler.finalize(sid)
    assert metrics_by_path(tmp_path / "p.hatchet")[("capture", "k")]["count"] == 1
    assert DT.device_timer_stats()["graph_replays_unmatched"] == 1


def test_the_wrapper_labels_captures_and_comes_off_cleanly():
    class Graph:
        def capture_begin(self):
            return "begun"

        def capture_end(self):
            raise RuntimeError("capture failed")

        def replay(self):
            return "replayed"

    originals = dict(Graph.__dict__)
    graph_replays.install(_native, Graph, stream_of=lambda graph: 0)
    try:
        g = Graph()
        assert g.capture_begin() == "begun" and getattr(g, graph_replays.LABEL) > 0
        with pytest.raises(RuntimeError, match="capture failed"):
            g.capture_end()  # the thread's label is cleared all the same
        assert g.replay() == "replayed"  # no ring: the note is a no-op
        assert Graph in graph_replays.installed()
    finally:
        graph_replays.uninstall()
    assert all(Graph.__dict__[name] is originals[name] for name in ("capture_begin", "capture_end", "replay"))
    assert graph_replays.installed() == []


def test_the_backend_wraps_torch_graphs_while_its_ring_runs(ring):
    """attach_session wraps torch.cuda.CUDAGraph (torch may be imported after the ring started);
    free() lets the ring go and puts torch's methods back."""
    import torch

    from flagtree.profiler.backends.device_timer import DeviceTimerBackend, DeviceTimerState

    class Session:
        state, hook = DeviceTimerState(), None

    ring(64, 16)
    replay = torch.cuda.CUDAGraph.__dict__["replay"]
    backend = DeviceTimerBackend()
    backend._graph_records = 256  # what _install sets for a ring with a graph area
    try:
        backend.attach_session(Session())
        assert torch.cuda.CUDAGraph.replay.__flagtree_wraps__ is replay
    finally:
        backend.free()
    assert torch.cuda.CUDAGraph.__dict__["replay"] is replay and graph_replays.installed() == []
    assert not _native.device_timer.device_timer_running()


def test_the_perfetto_timeline_shows_replays_on_their_launch_stream(tmp_path, ring, allocator, wrapped):
    pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                             reason="the perfetto package (pyproject's test extra) decodes the .pftrace")
    ring(64, 16)
    sid = _session(tmp_path, data="perfetto")
    graph = wrapped([("k", 40)])
    graph.capture()
    for stream in (0x5000, 0x6000):
        slot = allocate(stream)
        T.device_timer_host_meta(slot, DT.device_timer_name_kernel(f"eager{stream:x}"), (1, 1, 1), 32)
        T.device_timer_host_stamp(slot, 0, graph.clock, graph.clock + 5)
    for i in range(4):
        graph.stream = (0x5000, 0x6000)[i % 2]
        graph.replay()
    DT.device_timer_drain()
    profiler.finalize(sid)
    trace = pb.Trace.FromString((tmp_path / "p.pftrace").read_bytes())
    names, tracks, begins = {}, {}, []
    for packet in trace.packet:
        names.update((e.iid, e.name) for e in packet.interned_data.event_names)
        if packet.HasField("track_descriptor"):
            tracks[packet.track_descriptor.uuid] = packet.track_descriptor.name
        if packet.HasField("track_event") and packet.track_event.type == 1:  # slice begin
            begins.append((packet.timestamp, names.get(packet.track_event.name_iid), packet.track_event.track_uuid))
    begins = [(ts, name, tracks.get(uuid)) for ts, name, uuid in begins]
    rows = {name: track for _, name, track in begins if name and name.startswith("eager")}
    replays = [track for _, name, track in sorted(begins) if name == "k"]
    assert set(rows.values()) == {"stream 0", "stream 1"}
    # each replay on a graph track of the stream it was launched on, not a stream of its own
    assert replays == [rows[f"eager{s:x}"] + " graph 1" for s in (0x5000, 0x6000, 0x5000, 0x6000)]
