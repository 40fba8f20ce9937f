"""A device_timer session under a schedule: each window is closed on the writer thread (its flush,
the ring's drain, runs there: step() returns before it), launches between windows run the
kernel's plain binary, and every launch of a window lands in that window's part. A real
device_timer session on the stand-in target with the ring on the host (test_launch_sight.py)."""
import json

import flagtree.profiler as profiler
from flagtree.profiler import _native, part_writer
from flagtree.profiler.session import find_session
from support.profiles import metrics_by_path
from test_launch_sight import _kernel, _launch, device  # noqa: F401 (fixture)
from support.writer_gate import WAIT_S, Gate


def _launches(part):
    return sum(m["count"] for path, m in metrics_by_path(part).items() if path[-1] == "add_kernel")


def test_a_windows_close_runs_on_the_writer_thread_and_launches_between_windows_are_idle(tmp_path, device):
    kernel = _kernel(tmp_path)
    gate = Gate()
    part_writer.hold = gate
    try:
        sid = profiler.start(str(tmp_path / "w"), backend="device_timer",
                             schedule=profiler.schedule(wait=1, active=1, repeat=2))
        _launch(kernel, 2)  # step 0: wait
        profiler.step()
        _launch(kernel, 3)  # step 1: the first window
        profiler.step()  # closes it: handed over, neither drained nor taken yet
        assert gate.entered.wait(WAIT_S)
        job = find_session(sid).part_jobs[-1]
        assert not job.closed.is_set() and job.taken is None
        _launch(kernel, 4)  # step 2: wait, while the close is held
        gate.opened.set()
        profiler.step()  # opens the second window once the first is closed
        assert job.closed.is_set()
        _launch(kernel, 1)  # step 3: the second window
        profiler.step()
        profiler.finalize(sid)
    finally:
        part_writer.hold = None
    meta = json.load(open(tmp_path / "w.meta.json"))
    assert [_launches(p) for p in meta["parts"]] == [3, 1, 0]
    assert meta["part_steps"][:2] == [[1], [3]] and all("take_ns" in t for t in meta["part_times"][:2])
    assert meta["device_timer_launches"] == 4 and meta["device_timer_records"] == 4
    assert meta["device_timer_untimed"] == 0
    # Between windows the kernel ran its own plain binary (compile_pause.py): no allocator call.
    assert meta["device_timer_idle_launches"] == 0
    assert device.stamped_runs() == 4 and len(device.ran) == 10


def test_a_ring_holding_captured_launches_or_a_scoped_kernel_keeps_the_close_on_the_callers_thread(
        ring, allocator, monkeypatch):
    """Captured launches are read back after a device-wide sync, which must not run on another
    thread while the program may be capturing; kernel-side scopes drain through Python."""
    from flagtree.profiler.backends.device_timer import DeviceTimerBackend, compiler_hook
    from support.device_timer_ring import allocate

    ring(16, 4)
    backend = DeviceTimerBackend()
    backend._use.users = 1  # the host ring above stands in for the one its first session starts
    assert backend.flush_off_thread
    monkeypatch.setitem(compiler_hook.stats, "scoped", 1)
    assert not backend.flush_off_thread
    monkeypatch.setitem(compiler_hook.stats, "scoped", 0)
    _native.testing.device_timer_host_capturing(0x7777, True)
    try:
        assert allocate(0x7777) & 8  # a tagged graph descriptor
    finally:
        _native.testing.device_timer_host_capturing(0x7777, False)
    assert not backend.flush_off_thread
