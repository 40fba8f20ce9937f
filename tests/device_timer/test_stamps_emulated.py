"""The PTX stamps themselves, run on the CPU (support/ptx_subset.py) against the ring's host
stand-in: what the generated entry and exit stamps write to a ring slot or a graph descriptor is
read back by the native decoders, as on the GPU. This checks the stamps' arithmetic (lanes,
tickets, replay records, the next record's zeroing, the pointer's mark), not the hardware's
atomics or timer, which only the GPU tests can."""
import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends.device_timer.ptx_stamps import kernel_entry, stamp_ptx
from support.device_timer_ring import allocate
from support.profiles import metrics_by_path
from support.ptx_subset import Memory, run
from test_stamps import PTX

T = _native.testing
LAYOUT = _native.device_timer.device_timer_layout()
LANES = LAYOUT["lanes"]
RECORDS = 8
CAPTURE_STREAM = 0x7777


def _blocks(name):
    """The stamped kernel's entry and exit blocks (with their labels) and its slot parameter."""
    kid = _native.device_timer.device_timer_name_kernel(name)
    out = stamp_ptx(PTX, kid, _native.device_timer.device_timer_plane_bytes(), LANES, RECORDS)
    _, param, _, _ = kernel_entry(PTX)
    entry = out[out.index("entry stamp"):out.index("$ftp_entry_done:") + len("$ftp_entry_done:")]
    exit_ = out[out.index("exit stamp"):out.index("$ftp_exit_done1:") + len("$ftp_exit_done1:")]
    return entry.split("\n", 1)[1], exit_.split("\n", 1)[1], param


def _special(grid, block, index, time, smid=0):
    x, rest = index % grid[0], index // grid[0]
    regs = {"%tid.x": 0, "%laneid": 0, "%smid": smid, "%globaltimer": time}
    regs.update({f"%ctaid.{a}": v for a, v in zip("xyz", (x, rest % grid[1], rest // grid[1]))})
    regs.update({f"%nctaid.{a}": v for a, v in zip("xyz", grid)})
    regs.update({"%ntid.x": block, "%ntid.y": 1, "%ntid.z": 1})
    return regs


def _launch(stamps, pointer, memory, grid, block, start, end):
    """One launch (or replay): every block leader's entry (a little after the first), then every
    warp's exit, the last one at `end`."""
    entry, exit_, param = stamps
    blocks = grid[0] * grid[1] * grid[2]
    warps = blocks * ((block + 31) // 32)
    for b in range(blocks):
        run(entry, {param: pointer}, _special(grid, block, b, start + 3 * b, smid=b % 7), memory)
    for w in range(warps):
        run(exit_, {param: pointer}, _special(grid, block, w % blocks, end - (warps - 1 - w), smid=w % 7), memory)


@pytest.mark.parametrize("grid, block", [((70, 1, 1), 64), ((5, 3, 2), 96), ((9, 4, 3), 32)],
                         ids=["70-blocks-lanes-uneven", "30-blocks-fewer-than-lanes", "108-blocks-in-3d"])
def test_replays_of_a_many_block_kernel_stamped_by_the_ptx_are_read_back_whole(tmp_path, ring, allocator, grid, block):
    """Twelve replays through eight records (each lane's last warp of a replay zeroes its row of
    the next record). 70 blocks: the tickets of lanes 0-5 count three blocks a replay, the others
    two; 30 blocks leave two lanes without any; a 3-D grid numbers its blocks x fastest."""
    ring(64, 16, graph_records=RECORDS)
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
    T.device_timer_host_capturing(CAPTURE_STREAM, True)
    with profiler.scope("capture"):
        node = allocate(CAPTURE_STREAM)
    T.device_timer_host_capturing(CAPTURE_STREAM, False)
    base = node & ~15
    memory = Memory([(base, base + LAYOUT["graph_header_bytes"] + RECORDS * LAYOUT["graph_record_bytes"])])
    stamps = _blocks("wide")
    t = _native.core.monotonic_ns()
    for i in range(12):
        _launch(stamps, node, memory, grid, block, t + 10_000 * i, t + 10_000 * i + 900 + i)
        if i in (5, 11):
            _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    metrics = metrics_by_path(tmp_path / "p.hatchet")[("capture", "wide")]
    assert metrics["count"] == 12 and metrics["time (ns)"] == sum(900 + i for i in range(12))
    stats = _native.device_timer.device_timer_stats()
    assert stats["graph_replays_timed"] == 12 and stats["graph_replays_lost"] == 0


def test_a_launch_stamped_by_the_ptx_fills_its_ring_slot(tmp_path, ring, allocator):
    ring(64, 16)
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
    with profiler.scope("step"):
        slot = allocate()
    assert slot & LAYOUT["slot_mark"]
    base = slot & ~1  # the ring's first slot: its planes follow
    memory = Memory([(base, base + (LANES + 1) * _native.device_timer.device_timer_plane_bytes())])
    t = _native.core.monotonic_ns()
    _launch(_blocks("k"), slot, memory, (5, 2, 1), 96, t, t + 750)
    _native.device_timer.device_timer_drain()
    profiler.finalize(sid)
    metrics = metrics_by_path(tmp_path / "p.hatchet")[("step", "k")]
    assert metrics["count"] == 1 and metrics["time (ns)"] == 750


def test_the_ptx_stamps_touch_no_memory_through_a_pointer_without_the_mark(ring, allocator):
    """Null, or another tool's scratch (even): no access at all (Memory allows none)."""
    ring(64, 16)
    stamps = _blocks("k")
    for pointer in (0, 0x7F00_0000_1000, 0x7F00_0000_1008):
        _launch(stamps, pointer, Memory([]), (40, 1, 1), 64, 1_000, 2_000)
