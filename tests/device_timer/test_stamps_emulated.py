"""The PTX stamps themselves, run on the CPU (support/ptx_subset.py) against the ring's host
stand-in: what the generated entry and exit stamps write to a ring slot or a graph descriptor is
read back by the native decoders, as on the GPU. This checks the stamps' arithmetic (lanes,
tickets, replay records, the next record's zeroing, the pointer's mark), not the hardware's
atomics or timer, which only the GPU tests can."""
import ctypes
import random

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from support.device_timer_ring import allocate
from support.profiles import metrics_by_path
from support.ptx_subset import Memory
from support.stamped_kernel import StampedKernel, descriptor_memory, slot_memory

T = _native.testing
LAYOUT = _native.device_timer.device_timer_layout()
RECORDS = 8
CAPTURE_STREAM = 0x7777


def _captured_node():
    T.device_timer_host_capturing(CAPTURE_STREAM, True)
    with profiler.scope("capture"):
        node = allocate(CAPTURE_STREAM)
    T.device_timer_host_capturing(CAPTURE_STREAM, False)
    return node


@pytest.mark.parametrize("fixed_block", [True, False], ids=["reqntid", "block-from-ntid"])
@pytest.mark.parametrize("grid, block", [((70, 1, 1), 64), ((5, 3, 2), 96), ((9, 4, 3), 32), ((20, 1, 1), 32)],
                         ids=["70-blocks-lanes-uneven", "30-blocks-fewer-than-lanes", "108-blocks-in-3d",
                              "one-warp-a-lane"])
def test_replays_of_a_many_block_kernel_stamped_by_the_ptx_are_read_back_whole(tmp_path, ring, allocator, grid, block,
                                                                                fixed_block):
    """Twelve replays through eight records (a warp of each lane zeroes its row of the next
    record). 70 blocks: the tickets of lanes 0-5 count three blocks a replay, the others two; 30
    blocks leave two lanes without any; a 3-D grid numbers its blocks x fastest; with one warp on
    a lane, that warp alone holds the lane's first ticket."""
    ring(64, 16, graph_records=RECORDS)
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
    node = _captured_node()
    memory, kernel = descriptor_memory(node, RECORDS), StampedKernel("wide", RECORDS, fixed_block)
    t = _native.core.monotonic_ns()
    for i in range(12):
        kernel.launch(node, memory, grid, block, t + 10_000 * i, t + 10_000 * i + 900 + i)
        if i in (5, 11):
            _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    metrics = metrics_by_path(tmp_path / "p.hatchet")[("capture", "wide")]
    assert metrics["count"] == 12 and metrics["time (ns)"] == sum(900 + i for i in range(12))
    stats = _native.device_timer.device_timer_stats()
    assert stats["graph_replays_timed"] == 12 and stats["graph_replays_lost"] == 0


def test_a_grid_of_more_warps_than_ticket_pairs_numbers_its_replays_on_shared_pairs(tmp_path, ring, allocator):
    """1,200 warps on 1,024 ticket pairs: the first 176 pairs take two warps a replay, the rest
    one, and the device's pair of a warp must be the host's."""
    ring(64, 16, graph_records=4)
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
    node = _captured_node()
    memory, kernel = descriptor_memory(node, 4), StampedKernel("many_warps", 4)
    t = _native.core.monotonic_ns()
    for i in range(5):
        kernel.launch(node, memory, (300, 1, 1), 128, t + 100_000 * i, t + 100_000 * i + 50_000 + i)
        if i in (2, 4):
            _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    metrics = metrics_by_path(tmp_path / "p.hatchet")[("capture", "many_warps")]
    assert metrics["count"] == 5 and metrics["time (ns)"] == sum(50_000 + i for i in range(5))


def test_warps_of_a_replay_end_in_any_order_and_still_stamp_its_record(tmp_path, ring, allocator):
    """A warp's replay comes from the ticket it took as it started, not from when it ends: warps
    that start in one order and end in a shuffled one (block (0,0,0) and the zeroing warps among
    the first to end) still give each replay its own start and end."""
    ring(64, 16, graph_records=RECORDS)
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
    node = _captured_node()
    memory, kernel = descriptor_memory(node, RECORDS), StampedKernel("shuffled", RECORDS)
    order = random.Random(7)
    t = _native.core.monotonic_ns()
    for i in range(10):
        warps = kernel.warps(node, memory, (40, 1, 1), 128)
        for w in warps:
            w.enter(t + 10_000 * i + 2 * w.block_index)
        order.shuffle(warps)
        for n, w in enumerate(warps):
            w.leave(t + 10_000 * i + 100 + n)  # the last to end at 100 + warps - 1
        if i in (4, 9):
            _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    metrics = metrics_by_path(tmp_path / "p.hatchet")[("capture", "shuffled")]
    assert metrics["count"] == 10 and metrics["time (ns)"] == 10 * (100 + 160 - 1)


def test_a_launch_stamped_by_the_ptx_fills_its_ring_slot(tmp_path, ring, allocator):
    ring(64, 16)
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
    with profiler.scope("step"):
        slot = allocate()
    assert slot & LAYOUT["slot_mark"]
    t = _native.core.monotonic_ns()
    StampedKernel("k", RECORDS).launch(slot, slot_memory(slot), (5, 2, 1), 96, t, t + 750)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    metrics = metrics_by_path(tmp_path / "p.hatchet")[("step", "k")]
    assert metrics["count"] == 1 and metrics["time (ns)"] == 750


def test_the_ptx_stamps_touch_no_memory_through_a_pointer_without_the_mark(ring, allocator):
    """Null, or another tool's scratch (even): no access at all (Memory allows none)."""
    ring(64, 16)
    kernel = StampedKernel("k", RECORDS)
    for pointer in (0, 0x7F00_0000_1000, 0x7F00_0000_1008):
        kernel.launch(pointer, Memory([]), (40, 1, 1), 64, 1_000, 2_000)


def test_lanes_other_than_a_warp_s_first_touch_no_memory(ring, allocator):
    """Only lane 0 of a warp stamps: the other lanes of a slot's or a replay's launch run both
    stamps with no memory allowed them."""
    ring(64, 16, graph_records=RECORDS)
    kernel = StampedKernel("k", RECORDS)
    for pointer in (allocate(), _captured_node()):
        for w in kernel.warps(pointer, Memory([]), (3, 1, 1), 64, all_lanes=True):
            if w.special["%laneid"]:
                w.enter(1_000)
                w.leave(2_000)


@pytest.mark.parametrize("ticket", [11, (1 << 33) + 7, (1 << 32) - 1], ids=["32-bit", "64-bit", "largest-32-bit"])
def test_a_warp_s_replay_is_its_ticket_over_its_pair_s_warps_at_any_width(ring, ticket):
    """2,400 warps: pair 0 holds three a replay. The exit stamp of warp 0 of block 0 divides its
    ticket by three (32 bits while both fit, else 64) and stamps that replay's record."""
    replay = ticket // 3
    records = 4
    ring(64, 16, graph_records=records)  # names kernels
    layout = LAYOUT
    size = layout["graph_header_bytes"] + records * layout["graph_record_bytes"]
    buffer = (ctypes.c_uint64 * (size // 8))()
    base = ctypes.addressof(buffer)
    warp = StampedKernel("k", records).warps(base | 9, Memory([(base, base + size)]), (600, 1, 1), 128)[0]
    warp.regs.update({"%ftp_g0": ~100 & (2**64 - 1), "%ftp_g1": ticket})
    warp.leave(5_000)
    record = (layout["graph_header_bytes"] + (replay % records) * 16) // 8
    row = record + records * 2  # lane 0's row: plane 1 of the record, a plane of `records` rows on
    assert (buffer[row], buffer[row + 1]) == (~100 & (2**64 - 1), 5_000)
    assert sum(1 for i in range(layout["graph_header_bytes"] // 8, size // 8) if buffer[i]) == 4  # + meta
