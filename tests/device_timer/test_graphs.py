"""The device_timer ring in CUDA graphs, through its host stand-in: a launch captured into a graph
gets a tagged descriptor; replays run the stamps' own PTX on the CPU (every warp takes its ticket
as it starts and stamps as it ends); readback delivers one record per replay under the capture
context, counts replays lost to a wrap, waits for replays under way, and is put off while a
capture is open."""
import functools

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from support.device_timer_ring import allocate
from support.profiles import metrics_by_path
from support.stamped_kernel import StampedKernel, descriptor_memory

T = _native.testing
LAYOUT = _native.device_timer.device_timer_layout()
CAPTURE_STREAM = 0x7777


def _capture(stream=CAPTURE_STREAM):
    """The allocator called for a launch into a capturing stream (the capture stays open)."""
    T.device_timer_host_capturing(stream, True)
    return allocate(stream)


def _end_capture(stream=CAPTURE_STREAM):
    T.device_timer_host_capturing(stream, False)


@functools.lru_cache(maxsize=None)
def _kernel(name, records):
    return StampedKernel(name, records)


def _start(tagged, name, start, grid, block):
    """A replay's warps started (block leaders a little after the first); the warps, to end."""
    records = T.device_timer_host_graph_records()
    warps = _kernel(name, records).warps(tagged, descriptor_memory(tagged, records), grid, block)
    for w in warps:
        w.enter(start + 3 * w.block_index)
    return warps


def _end(warps, end):
    """The warps end, the last at `end`."""
    for i, w in enumerate(warps):
        w.leave(end - (len(warps) - 1 - i))


def _replay(tagged, name, start, end, grid=(3, 1, 2), block=96):
    """One replay of a captured kernel running from start to end (ns)."""
    _end(_start(tagged, name, start, grid, block), end)


def _session(tmp_path, name="p"):
    return profiler.start(str(tmp_path / name), backend="interpreter")


def test_replays_of_two_captured_launches_are_timed_under_the_capture_context(tmp_path, ring, allocator):
    ring(64, 16)
    sid = _session(tmp_path)
    with profiler.scope("capture"):
        first, second = _capture(), _capture()
    _end_capture()
    descriptor = LAYOUT["graph_header_bytes"] + 256 * LAYOUT["graph_record_bytes"]
    assert first & 15 == LAYOUT["graph_tag"] | LAYOUT["slot_mark"] and second - first == descriptor  # tagged, one each
    t = _native.core.monotonic_ns()
    with profiler.scope("replays"):
        for i in range(100):
            _replay(first, "k1", t + 1_000 * i, t + 1_000 * i + 100)
            _replay(second, "k2", t + 1_000 * i + 200, t + 1_000 * i + 350, grid=(1, 1, 1), block=32)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    assert tree[("capture", "k1")]["count"] == 100 and tree[("capture", "k1")]["time (ns)"] == 100 * 100
    assert tree[("capture", "k2")]["count"] == 100 and tree[("capture", "k2")]["time (ns)"] == 100 * 150
    assert not any(k[0] == "replays" for k in tree)  # where graph.replay() ran is not the context
    stats = _native.device_timer.device_timer_stats()
    assert (stats["graph_nodes"], stats["graph_replays_timed"], stats["graph_replays_lost"]) == (2, 200, 0)
    assert stats["records"] == 200 and stats["launches"] == 0 and stats["captured_untimed"] == 0


def test_each_readback_delivers_the_replays_since_the_last_once(tmp_path, ring, allocator):
    ring(64, 16, graph_records=16)
    sid = _session(tmp_path)
    node = _capture()
    _end_capture()
    t = _native.core.monotonic_ns()
    for i in range(5):
        _replay(node, "k", t + 1_000 * i, t + 1_000 * i + 10 * (i + 1))
    _native.device_timer.device_timer_drain()
    _native.device_timer.device_timer_drain()  # nothing new: nothing delivered twice
    for i in range(5, 20):  # 15 more: the most that fit between readbacks (R - 1)
        _replay(node, "k", t + 1_000 * i, t + 1_000 * i + 10 * (i + 1))
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    node_metrics = metrics_by_path(tmp_path / "p.hatchet")[("k",)]
    assert node_metrics["count"] == 20 and node_metrics["time (ns)"] == sum(10 * (i + 1) for i in range(20))
    stats = _native.device_timer.device_timer_stats()
    assert stats["graph_replays_timed"] == 20 and stats["graph_replays_lost"] == 0
    assert stats["graph_readbacks"] == 3


def test_more_replays_than_records_lose_the_oldest_and_count_them(tmp_path, ring, allocator):
    ring(64, 16, graph_records=8)
    sid = _session(tmp_path)
    node = _capture()
    _end_capture()
    t = _native.core.monotonic_ns()
    for i in range(20):  # the records wrap: each replay zeroed the next record
        _replay(node, "k", t + 1_000 * i, t + 1_000 * i + i + 1)
    _native.device_timer.device_timer_drain()
    assert _native.device_timer.device_timer_stats()["graph_replays_lost"] == 13  # 20 - (R - 1)
    for i in range(20, 23):
        _replay(node, "k", t + 1_000 * i, t + 1_000 * i + i + 1)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    node_metrics = metrics_by_path(tmp_path / "p.hatchet")[("k",)]
    # the newest seven of the first twenty, then all three: none with a stale start
    assert node_metrics["count"] == 10 and node_metrics["time (ns)"] == sum(range(14, 21)) + sum(range(21, 24))
    stats = _native.device_timer.device_timer_stats()
    assert stats["graph_replays_timed"] == 10 and stats["graph_replays_lost"] == 13


@pytest.mark.parametrize("grid, running", [((2, 1, 1), 1), ((70, 1, 1), 40)])
def test_a_replay_under_way_at_readback_is_read_at_the_next(tmp_path, ring, allocator, grid, running):
    """`running` warps still to exit. With 70 blocks the tickets of lanes 0-5 count three blocks a
    replay and the others two, and the warps still running belong to several lanes."""
    ring(64, 16, graph_records=16)
    sid = _session(tmp_path)
    node = _capture()
    _end_capture()
    t = _native.core.monotonic_ns()
    block = 64
    for i in range(2):
        _replay(node, "k", t + 1_000 * i, t + 1_000 * i + 50, grid, block)
    warps = _start(node, "k", t + 5_000, grid, block)
    finished, under_way = warps[:-running], warps[-running:]
    for i, w in enumerate(finished):
        w.leave(t + 5_070 - (len(warps) - 1 - i))
    _native.device_timer.device_timer_drain()
    assert _native.device_timer.device_timer_stats()["graph_replays_timed"] == 2
    _end(under_way, t + 5_070)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    node_metrics = metrics_by_path(tmp_path / "p.hatchet")[("k",)]
    assert node_metrics["count"] == 3 and node_metrics["time (ns)"] == 50 + 50 + 70


def test_a_running_replay_costs_the_oldest_record_when_the_node_is_full(tmp_path, ring, allocator):
    ring(64, 16, graph_records=4)
    sid = _session(tmp_path)
    node = _capture()
    _end_capture()
    t = _native.core.monotonic_ns()
    for i in range(3):
        _replay(node, "k", t + 1_000 * i, t + 1_000 * i + 10)
    _start(node, "k", t + 9_000, (3, 1, 2), 96)  # a warp of it will zero the oldest record
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    assert metrics_by_path(tmp_path / "p.hatchet")[("k",)]["count"] == 2
    assert _native.device_timer.device_timer_stats()["graph_replays_lost"] == 1


def test_a_session_started_after_the_capture_files_replays_under_captured_at_unknown(tmp_path, ring, allocator):
    ring(64, 16)
    early = _session(tmp_path, "early")
    with profiler.scope("capture"):
        node = _capture()
    _end_capture()
    late = _session(tmp_path, "late")
    t = _native.core.monotonic_ns()
    _replay(node, "k", t, t + 400)
    _native.device_timer.device_timer_drain()
    profiler.finalize(late)
    profiler.finalize(early)
    assert metrics_by_path(tmp_path / "early.hatchet")[("capture", "k")]["count"] == 1
    assert metrics_by_path(tmp_path / "late.hatchet")[("<captured_at:unknown>", "k")]["count"] == 1


def test_replays_from_before_a_session_began_are_not_its(tmp_path, ring, allocator):
    ring(64, 16)
    node = _capture()
    _end_capture()
    t = _native.core.monotonic_ns()
    _replay(node, "k", t, t + 400)  # no session open; read back at the session's first drain
    sid = _session(tmp_path)
    t = _native.core.monotonic_ns()
    _replay(node, "k", t, t + 300)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    assert tree[("<captured_at:unknown>", "k")]["count"] == 1
    assert tree[("<captured_at:unknown>", "k")]["time (ns)"] == 300


def test_readback_is_put_off_while_a_capture_is_open_or_the_device_cannot_sync(tmp_path, ring, allocator):
    ring(64, 16)
    sid = _session(tmp_path)
    with profiler.scope("capture"):
        node = _capture()
    t = _native.core.monotonic_ns()
    _replay(node, "k", t, t + 100)  # (a replay of an earlier graph, say, while the capture goes on)
    syncs = T.device_timer_host_syncs()
    _native.device_timer.device_timer_drain()
    assert T.device_timer_host_syncs() == syncs  # a device-wide sync would end the capture
    _end_capture()
    T.device_timer_host_sync_fails(True)
    _native.device_timer.device_timer_drain()
    stats = _native.device_timer.device_timer_stats()
    assert stats["graph_readbacks_skipped"] == 2 and stats["graph_replays_timed"] == 0
    T.device_timer_host_sync_fails(False)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    assert metrics_by_path(tmp_path / "p.hatchet")[("capture", "k")]["count"] == 1
    assert _native.device_timer.device_timer_stats()["graph_replays_timed"] == 1


def test_a_full_graph_area_leaves_further_captured_launches_untimed_and_counted(tmp_path, ring, allocator):
    ring(64, 16, graph_records=4, graph_nodes_per_chunk=2, graph_chunks=2)
    nodes = [_capture() for _ in range(5)]
    _end_capture()
    assert all(n & LAYOUT["graph_tag"] for n in nodes[:4]) and len(set(nodes[:4])) == 4
    assert nodes[4] == 0  # the kernel's stamps skip a null pointer
    stats = _native.device_timer.device_timer_stats()
    assert stats["graph_nodes"] == 4 and stats["captured_untimed"] == 1 and stats["launches"] == 0


def test_a_ring_without_a_graph_area_gives_captured_launches_no_slot_and_counts_them(tmp_path, ring, allocator):
    """Stamps without a graph path (the LLVM IR stamps) start the ring with no graph area."""
    ring(16, 4, graph_records=0)
    nodes = [_capture() for _ in range(3)]
    _end_capture()
    assert nodes == [0, 0, 0]
    stats = _native.device_timer.device_timer_stats()
    assert stats["captured_untimed"] == 3 and stats["graph_nodes"] == 0 and stats["launches"] == 0
    _native.device_timer.device_timer_drain()  # no graph readback to do


def test_ordinary_launches_and_graph_replays_side_by_side(tmp_path, ring, allocator):
    ring(8, 2)
    sid = _session(tmp_path)
    with profiler.scope("capture"):
        node = _capture()
    _end_capture()
    t = _native.core.monotonic_ns()
    with profiler.scope("eager"):
        for i in range(12):  # the ring wraps while the graph replays
            slot = allocate()
            assert not slot & LAYOUT["graph_tag"]
            kid = _native.device_timer.device_timer_name_kernel("eager_k")
            T.device_timer_host_meta(slot, kid, (1, 1, 1), 32)
            T.device_timer_host_stamp(slot, 0, t + 1_000 * i, t + 1_000 * i + 20)
            _replay(node, "graph_k", t + 1_000 * i + 500, t + 1_000 * i + 530)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    assert tree[("eager", "eager_k")]["count"] == 12 and tree[("capture", "graph_k")]["count"] == 12
    stats = _native.device_timer.device_timer_stats()
    assert stats["records"] == 24 and stats["launches"] == 12 and stats["graph_replays_timed"] == 12


def test_deferred_captured_launches_take_the_capture_context_in_the_exit_hook(tmp_path, ring, allocator):
    """hook="triton": a captured launch's context is resolved when Triton's exit hook says it is
    done, still inside the capture's scope; the node is created then."""
    ring(64, 16)
    sid = _session(tmp_path)
    _native.device_timer.device_timer_defer_launches(True)
    with profiler.scope("capture"):
        node = _capture()
        _native.device_timer.device_timer_launch_done()
    _end_capture()
    t = _native.core.monotonic_ns()
    _replay(node, "k", t, t + 100)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    assert metrics_by_path(tmp_path / "p.hatchet")[("capture", "k")]["count"] == 1


def test_lost_replays_and_put_off_readbacks_are_warned_about_with_their_counts():
    import warnings

    from flagtree.profiler.backends.device_timer import RingOptions
    from flagtree.profiler.backends.device_timer.untimed import warn_graph_losses

    class Session:
        metadata_path = "run.meta.json"

    stats = {"device_timer_graph_replays_lost": 13, "device_timer_graph_readbacks_skipped": 2}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_graph_losses(stats, RingOptions(graph_replays=8), Session())
    texts = [str(w.message) for w in caught]
    assert any("13 CUDA graph replays" in t and "more than 7 replays" in t and "run.meta.json" in t for t in texts)
    assert any("2 readbacks" in t for t in texts)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_graph_losses({"device_timer_graph_replays_lost": 0}, RingOptions(), Session())
    assert not caught
