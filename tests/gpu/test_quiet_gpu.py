"""CUPTI quiet while no session is active (csrc/backends/dialect/dialect_tracer_quiet.h) on a real
GPU: kernels still running or still in CUPTI's buffers when it goes quiet are recorded, launches
while quiet are not, and a schedule's windows, closed on the writer thread, each hold exactly
their own launches."""
import pytest
import torch

import flagtree.profiler as profiler
from flagtree.profiler import _native
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree


@pytest.fixture(autouse=True)
def close_sessions():
    yield
    profiler.finalize()


def quiet():
    return _native.nvidia.cupti_attach_stats()["quiet"]


def adds(root):
    return sum(count for path, count in kernel_counts(root).items() if "add_kernel" in path[-1])


def test_kernels_running_at_the_switch_off_are_recorded(tmp_path):
    x, y, out = tensors(1024)
    sid = profiler.start(name=str(tmp_path / "q"), backend="nvidia")
    torch.cuda._sleep(200_000_000)  # still running when the session is deactivated
    for _ in range(10):
        launch_add(x, y, out)  # queued behind it
    profiler.deactivate(sid)
    assert quiet()
    for _ in range(7):
        launch_add(x, y, out)
    torch.cuda.synchronize()
    profiler.activate(sid)
    assert not quiet()
    for _ in range(3):
        launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "q.hatchet")
    assert adds(root) == 13
    meta = load_json(tmp_path / "q.meta.json")
    assert (meta["unattributed_records"], meta["lost_launches"], meta["dropped_records"]) == (0, 0, 0)


def test_windows_of_a_schedule_hold_their_own_launches(tmp_path):
    x, y, out = tensors(1024)
    profiler.start(name=str(tmp_path / "s"), backend="nvidia", schedule=profiler.schedule(wait=3, active=2, repeat=3))
    quiet_steps = []
    for _ in range(15):
        quiet_steps.append(quiet())
        for _ in range(4):
            launch_add(x, y, out)
        torch.cuda.synchronize()
        profiler.step()
    profiler.finalize()
    assert quiet_steps == [True, True, True, False, False] * 3
    meta = load_json(tmp_path / "s.meta.json")
    assert [adds(load_tree(part)[0]) for part in meta["parts"]][:3] == [8, 8, 8]
    assert meta["unattributed_records"] == 0 and meta["lost_launches"] == 0
    assert all("take_ns" in t for t in meta["part_times"][:3])  # each window closed on the writer thread
