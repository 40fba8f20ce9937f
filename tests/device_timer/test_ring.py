"""The device_timer ring through its host stand-in: slots handed out by Triton's profile
allocator, stamps written as a kernel's blocks would, readback, wrap, backpressure, launches that
never ran, and the records reaching a session's tree under the launch's context."""
import ctypes
import threading

import flagtree.profiler as profiler
from flagtree.profiler import _native
from support.profiles import metrics_by_path

from support.device_timer_ring import allocate as _allocate
from support.triton_needs import needs_compiler_hooks

T = _native.testing
LAYOUT = _native.device_timer.device_timer_layout()
TAG = LAYOUT["align_tag"]


def _kernel(slot, name, start, end, grid=(1, 1, 1), block=128, lanes=((0, 0, 0),)):
    """Stamps `slot` as a launch of kernel `name` running from start to end (ns) would: block
    (0,0,0) stores the id and geometry; each (lane, start delta, end delta) is one block."""
    kid = _native.device_timer.device_timer_name_kernel(name)
    T.device_timer_host_meta(slot, kid, grid, block)
    for lane, ds, de in lanes:
        T.device_timer_host_stamp(slot, lane, start + ds, end - de)


def _session(tmp_path, data="tree"):
    return profiler.start(str(tmp_path / "p"), backend="interpreter", data=data)


def test_records_reach_the_launch_context_with_the_earliest_start_and_latest_end(tmp_path, ring, allocator):
    ring(64, 16, offset_ns=1_000)
    sid = _session(tmp_path)
    with profiler.scope("step"):
        slot = _allocate()
    # three blocks on three lanes: the launch spans the earliest start and the latest end
    _kernel(slot, "add_kernel", 10_000, 50_000, grid=(3, 2, 1),
            lanes=((0, 5_000, 0), (3, 0, 7_000), (31, 2_000, 9_000)))
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    node = metrics_by_path(tmp_path / "p.hatchet")[("step", "add_kernel")]
    assert node["count"] == 1
    assert node["time (ns)"] == 40_000
    stats = _native.device_timer.device_timer_stats()
    assert stats["launches"] == 1 and stats["records"] == 1 and stats["untimed"] == 0


def test_slots_wrap_and_every_launch_is_delivered_once(tmp_path, ring, allocator):
    ring(4, 2)
    sid = _session(tmp_path)
    addresses = []
    with profiler.scope("loop"):
        for i in range(10):
            slot = _allocate()
            addresses.append(slot)
            _kernel(slot, "tiny", 1_000 * i, 1_000 * i + 300)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    assert len(set(addresses)) == 4  # four slots, reused
    assert addresses[4] == addresses[0] and addresses[1] - addresses[0] == LAYOUT["slot_bytes"]
    node = metrics_by_path(tmp_path / "p.hatchet")[("loop", "tiny")]
    assert node["count"] == 10 and node["time (ns)"] == 3_000
    stats = _native.device_timer.device_timer_stats()
    assert stats["records"] == 10 and stats["readbacks"] >= 5


def test_every_slot_pointer_carries_the_mark_and_only_marked_pointers_are_stamped(tmp_path, ring, allocator):
    """The stamps write only through the ring's marked pointers: scratch that another tool's
    profile allocator returned for our tag (even, never marked) is left alone."""
    ring(8, 2)
    sid = _session(tmp_path)
    with profiler.scope("step"):
        slot = _allocate()
    assert slot & LAYOUT["slot_mark"] and not slot & LAYOUT["graph_tag"]
    foreign = bytearray(8 * LAYOUT["slot_bytes"] * (LAYOUT["lanes"] + 1))
    address = ctypes.addressof((ctypes.c_char * len(foreign)).from_buffer(foreign))
    _kernel(address, "foreign", 0, 100)  # what the stamps do with another tool's scratch
    assert not any(foreign)
    _kernel(slot, "ours", 1_000, 1_400)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    assert metrics_by_path(tmp_path / "p.hatchet")[("step", "ours")]["time (ns)"] == 400


def test_kernels_stamped_with_a_retired_protocol_get_a_null_slot(ring, allocator):
    """Kernels kept in a disk cache from an earlier version ask with its tag; their stamps skip
    only a null pointer, so that is what they get, never another allocator's memory."""
    from triton.runtime import _allocation

    ring(8, 2)
    for tag in LAYOUT["retired_align_tags"]:
        assert tag != TAG and tag % 16 == 0
        assert _allocation._profile_allocator.get()(16, tag, 0x5000) == 0
    assert TAG % 16 == 0  # an allocator rounding up to it returns an even (unmarked) address


def test_a_full_ring_waits_for_its_readback_and_loses_nothing(tmp_path, ring, allocator):
    ring(4, 4)
    T.device_timer_host_hold(True)  # the copy stream has not got there yet
    sid = _session(tmp_path)
    for i in range(4):
        _kernel(_allocate(), "k", 100 * i, 100 * i + 50)
    fifth = {}

    def launch():
        fifth["slot"] = _allocate()

    waiter = threading.Thread(target=launch)
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and "slot" not in fifth  # backpressure: the claim waits
    T.device_timer_host_hold(False)
    waiter.join()
    _kernel(fifth["slot"], "k", 1_000, 1_050)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    assert metrics_by_path(tmp_path / "p.hatchet")[("k",)]["count"] == 5
    stats = _native.device_timer.device_timer_stats()
    assert stats["backpressure_waits"] == 1 and stats["records"] == 5


def test_a_launch_that_never_ran_is_counted_not_recorded(tmp_path, ring, allocator):
    ring(8, 8)
    sid = _session(tmp_path)
    _kernel(_allocate(), "ran", 0, 100)
    _allocate()  # its launch failed: nothing stamped the slot
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    assert tree[("ran",)]["count"] == 1 and len([k for k in tree if k[-1] != "ran"]) == 0
    assert _native.device_timer.device_timer_stats()["untimed"] == 1


def test_another_threads_launch_in_flight_is_not_read_before_it_is_queued(tmp_path, ring, allocator):
    ring(64, 2)
    sid = _session(tmp_path)
    slot = {}
    other = threading.Thread(target=lambda: slot.update(a=_allocate()))
    other.start()
    other.join()  # that thread claimed a slot; its launch is not known to be queued
    for i in range(6):  # enough claims here for readbacks
        _kernel(_allocate(), "main", i * 10, i * 10 + 5)
    _kernel(slot["a"], "late", 500, 900)  # its kernel stamps the slot only now
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    assert tree[("late",)]["count"] == 1 and tree[("late",)]["time (ns)"] == 400
    assert tree[("main",)]["count"] == 6 and _native.device_timer.device_timer_stats()["untimed"] == 0


@needs_compiler_hooks
def test_other_profile_scratch_requests_go_to_the_previous_allocator(ring):
    from triton.runtime import _allocation

    calls = []
    previous = _allocation._profile_allocator.get()
    _native.device_timer.device_timer_set_fallback(
        lambda size, align, stream: calls.append((size, align, stream)) or 1234)
    _allocation.set_profile_allocator(_native.device_timer.device_timer_allocate)
    try:
        ring(8, 8)
        assert _allocation._profile_allocator.get()(4096, 128, 9) == 1234
    finally:
        _allocation.set_profile_allocator(previous)
    assert calls == [(4096, 128, 9)]
    assert _native.device_timer.device_timer_stats()["launches"] == 0


def test_unknown_kernel_ids_keep_their_time_under_a_placeholder_name(tmp_path, ring, allocator):
    ring(8, 8)
    sid = _session(tmp_path)
    slot = _allocate()
    T.device_timer_host_meta(slot, 0x1234ABCD, (1, 1, 1), 32)
    T.device_timer_host_stamp(slot, 0, 0, 700)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    assert metrics_by_path(tmp_path / "p.hatchet")[("<kernel 1234abcd>",)]["time (ns)"] == 700
    assert _native.device_timer.device_timer_stats()["unknown_kernels"] == 1


def _node_of(tree, name):
    return next(m for k, m in tree.items() if k[-1] == name)


def test_deferred_launches_take_the_metadata_published_after_the_allocator(tmp_path, ring, allocator):
    """hook="triton" publishes a launch's metadata in the enter hook, after the allocator ran:
    deferred, the launch takes its context and metadata when the exit hook says it is done."""
    ring(8, 8)
    _native.context.clear_launch_metadata()
    sid = _session(tmp_path)
    _native.device_timer.device_timer_defer_launches(True)
    slot = _allocate()
    _native.context.set_launch_metadata("renamed_by_hook", [("flops", 5.0)])  # what the enter hook does
    _native.device_timer.device_timer_launch_done()  # the exit hook
    _kernel(slot, "add_kernel", 0, 1_000)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    node = _node_of(metrics_by_path(tmp_path / "p.hatchet"), "renamed_by_hook")
    assert node["count"] == 1 and node["flops"] == 5.0


def test_without_deferral_metadata_published_after_the_allocator_misses_its_launch(tmp_path, ring, allocator):
    ring(8, 8)
    _native.context.clear_launch_metadata()
    sid = _session(tmp_path)
    slot = _allocate()
    _native.context.set_launch_metadata("renamed_by_hook", [("flops", 5.0)])
    _kernel(slot, "add_kernel", 0, 1_000)
    _native.context.clear_launch_metadata()
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    assert _node_of(tree, "add_kernel")["count"] == 1 and not any(k[-1] == "renamed_by_hook" for k in tree)


def test_sessions_of_another_time_source_neither_see_nor_count_the_rings_launches(ring, allocator):
    """A CUPTI session beside a device_timer session: each launch reaches each route once, so
    each session counts only the launches of its own route (no double count, no false loss)."""
    ring(16, 4)
    tracer = _native.session.session_create(0, 0, int(_native.TimeSource.tracer))
    timer = _native.session.session_create(0, 0, int(_native.TimeSource.device_timer))
    try:
        slot = _allocate()
        _kernel(slot, "add_kernel", 10_000, 20_000)
        T.launch(77, False)
        T.record(77, "cupti_kernel", 10_000, 21_000, 0)
        _native.device_timer.device_timer_drain()
        for session in (timer, tracer):
            stats = _native.session.session_stats(session)
            assert (stats["records"], stats["unattributed"]) == (1, 0)
        assert _native.session.pending_launches(tracer) == 0 and _native.session.pending_launches(timer) == 0
    finally:
        _native.session.session_remove(tracer)
        _native.session.session_remove(timer)


def test_launches_while_every_session_is_deactivated_get_no_slot_and_are_counted_idle(tmp_path, ring, allocator):
    """Between a schedule's windows the ring hands out no slot (the stamps skip a null pointer):
    nothing to read back or deliver; the launches are counted as idle, and the next active
    launch gets a slot and its record as before."""
    ring(16, 4)
    sid = _session(tmp_path)
    profiler.deactivate(sid)
    idle = [_allocate() for _ in range(5)]
    profiler.activate(sid)
    with profiler.scope("window"):
        slot = _allocate()
    _kernel(slot, "add_kernel", 10_000, 30_000)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    assert idle == [0] * 5 and slot != 0
    stats = _native.device_timer.device_timer_stats()
    assert stats["idle_launches"] == 5 and stats["launches"] == 1 and stats["records"] == 1
    assert stats["untimed"] == 0
    assert metrics_by_path(tmp_path / "p.hatchet")[("window", "add_kernel")]["count"] == 1
