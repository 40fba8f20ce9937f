"""Parts written off the caller's thread, on a real GPU (CUPTI records arriving on their own
thread): each window's part holds exactly its steps' kernels, step() returns before the file is
written, and a trace's parts split the same launches."""
import os
import threading

import pytest
import torch

import flagtree.profiler as profiler
from flagtree.profiler import part_writer
from flagtree.profiler.session import find_session
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree


@pytest.fixture(autouse=True)
def close_sessions():
    yield
    part_writer.hold = None
    profiler.finalize()


def add_counts(root):
    return {p: c for p, c in kernel_counts(root).items() if p[-1] == "add_kernel"}


@pytest.mark.parametrize("backend", ["nvidia", "device_timer"])
def test_each_window_holds_exactly_its_steps_kernels(tmp_path, backend):
    x, y, out = tensors(1 << 20)
    launch_add(x, y, out)  # compiled outside the session
    torch.cuda.synchronize()
    sid = profiler.start(str(tmp_path / "w"), data="tree,trace", backend=backend,
                         schedule=profiler.schedule(wait=3, active=2))
    for k in range(20):
        with profiler.scope(f"step{k}"):
            for _ in range(50 + k):  # no sync: the records of a window's last launches arrive late
                launch_add(x, y, out)
        profiler.step(sid)
    profiler.finalize(sid)
    windows = [(3 + 5 * w, 4 + 5 * w) for w in range(4)]
    for w, steps in enumerate(windows):
        root, _ = load_tree(tmp_path / f"w.part{w + 1}.hatchet")
        assert add_counts(root) == {(f"step{k}", "add_kernel"): 50 + k for k in steps}
        events = load_json(tmp_path / f"w.part{w + 1}.chrome_trace")["traceEvents"]
        assert sum(1 for e in events if e.get("cat") == "kernel" and e["name"] == "add_kernel") == sum(
            50 + k for k in steps)
    meta = load_json(tmp_path / "w.meta.json")
    assert meta["part_steps"][:4] == [list(s) for s in windows]
    assert len(meta["part_times"]) == len(meta["parts"]) == 10
    if backend == "device_timer":  # closed on the writer thread; between windows the plain kernel runs
        assert all("take_ns" in t for t in meta["part_times"][:4])
        recorded = sum(50 + k for steps in windows for k in steps)
        assert meta["device_timer_launches"] == recorded and meta["device_timer_records"] == recorded
        assert meta["device_timer_idle_launches"] == 0


def test_step_returns_before_the_write_on_gpu(tmp_path):
    x, y, out = tensors(1 << 20)
    launch_add(x, y, out)
    torch.cuda.synchronize()
    opened, entered = threading.Event(), threading.Event()

    def hold(job):
        entered.set()
        assert opened.wait(30)

    part_writer.hold = hold
    # One window: a next one would wait for this one's close, which `hold` blocks on the writer.
    sid = profiler.start(str(tmp_path / "g"), schedule=profiler.schedule(active=1, repeat=1))
    launch_add(x, y, out)
    (path,) = profiler.step(sid)
    assert entered.wait(30) and not os.path.exists(path)
    opened.set()
    part_writer.wait(find_session(sid).part_jobs)
    assert add_counts(load_tree(path)[0]) == {("add_kernel",): 1}
