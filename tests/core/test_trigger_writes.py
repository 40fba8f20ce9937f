"""A trigger's window written off the caller's thread (window_close.py): the close returns before
the window's part and metadata are written, the next window opens meanwhile, disarm(), the
program's own finalize() and interpreter exit wait for the writes, and a failed write is warned
of. Real Triton kernels through the interpreter backend; the writer thread is made observably
slow through part_writer.hold, its seam for tests."""
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import part_writer
from flagtree.profiler import session as _session
from flagtree.profiler.window_close import wait_for_windows
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree

WAIT_S = 30  # a bound on waits that end at once when the code works
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Gate:
    """Holds the writer thread before each write until opened; records what it was given."""

    def __init__(self):
        self.opened, self.entered, self.seen = threading.Event(), threading.Event(), []

    def __call__(self, job):
        self.seen.append(os.path.basename(job.path))
        self.entered.set()
        assert self.opened.wait(WAIT_S)


@pytest.fixture
def gate(monkeypatch):
    for name in ("FLAGTREE_PROFILER_TRIGGER", "FLAGTREE_PROFILER_WINDOW"):
        monkeypatch.delenv(name, raising=False)
    held = Gate()
    part_writer.hold = held
    yield held
    held.opened.set()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a test's own failure is said by its assertions
            profiler.disarm()
            profiler.finalize()
    finally:
        part_writer.hold = None


def one_step(k, x, y, out):
    with profiler.scope(f"step{k}"):
        launch_add(x, y, out)
    return profiler.step()


def steps_in(path):
    return sorted(int(p[0][4:]) for p in kernel_counts(load_tree(path)[0]))


def test_a_windows_close_returns_before_its_part_and_metadata_are_written(gate, tmp_path):
    x, y, out = tensors()
    armed = profiler.arm("steps:0-1,2-2", name=str(tmp_path / "w"))
    one_step(0, x, y, out)
    part = str(tmp_path / "w.part1.hatchet")
    assert one_step(1, x, y, out) == [part]  # the window closed: handed over, not written
    assert not os.path.exists(part) and not os.path.exists(tmp_path / "w.meta.json")
    assert gate.entered.wait(WAIT_S)
    assert _session.open_sessions() != []  # the next window opened meanwhile
    one_step(2, x, y, out)  # and closed: queued behind the first
    assert not os.path.exists(part)
    gate.opened.set()
    profiler.disarm()
    assert gate.seen == ["w.part1.hatchet", "w.meta.json", "w.part2.hatchet", "w.meta.json"]
    assert steps_in(part) == [0, 1] and steps_in(tmp_path / "w.part2.hatchet") == [2]
    meta = load_json(tmp_path / "w.meta.json")
    assert meta["parts"] == [part, str(tmp_path / "w.part2.hatchet")] and meta["part_steps"] == [[0, 1], [2]]
    assert [w["steps"] for w in meta["windows"]] == [[0, 1], [2]] and meta["failed_windows"] == 0
    (times,) = meta["part_times"]  # this window's part, its write timed on the writer thread
    assert isinstance(times["write_ns"], int) and times["write_ns"] > 0 and times["caller_ns"] > 0
    assert meta["kernel_records"] == 1 and meta["lost_launches"] == 0
    assert armed.files == meta["parts"]


def test_disarm_waits_for_every_windows_write(gate, tmp_path):
    x, y, out = tensors()
    profiler.arm("steps:0-0,1-4", name=str(tmp_path / "d"), data="tree,trace")
    one_step(0, x, y, out)
    one_step(1, x, y, out)
    threading.Timer(0.3, gate.opened.set).start()
    written = profiler.disarm()  # closes window 2; returns once both windows are written
    assert written == [str(tmp_path / "d.part2.hatchet"), str(tmp_path / "d.part2.chrome_trace")]
    assert gate.seen == ["d.part1.hatchet", "d.part1.chrome_trace", "d.meta.json",
                         "d.part2.hatchet", "d.part2.chrome_trace", "d.meta.json"]
    assert [steps_in(tmp_path / f"d.part{k}.hatchet") for k in (1, 2)] == [[0], [1]]
    events = load_json(tmp_path / "d.part2.chrome_trace")["traceEvents"]
    assert [e["name"] for e in events if e.get("cat") == "kernel"] == ["add_kernel"]
    meta = load_json(tmp_path / "d.meta.json")
    assert [w["closed_by"] for w in meta["windows"]] == ["steps", "exit"]
    assert len(meta["parts"]) == 4 and len(meta["part_times"]) == 2


def test_the_programs_own_finalize_waits_for_a_closed_windows_metadata(gate, tmp_path):
    x, y, out = tensors()
    armed = profiler.arm("steps:0-0,1-5", name=str(tmp_path / "f"))
    one_step(0, x, y, out)  # window 1 closes, its write held; window 2 opens
    assert gate.entered.wait(WAIT_S)
    launch_add(x, y, out)
    threading.Timer(0.3, gate.opened.set).start()
    profiler.finalize()  # writes window 2 itself, after window 1's metadata
    assert gate.seen == ["f.part1.hatchet", "f.meta.json"]
    meta = load_json(tmp_path / "f.meta.json")  # window 2's, not window 1's written over it
    assert meta["parts"] == [str(tmp_path / f"f.part{k}.hatchet") for k in (1, 2)]
    profiler.disarm()
    assert [w["closed_by"] for w in armed.windows] == ["steps", "finalize()"]


def test_a_failed_window_write_is_warned_of_and_left_out_of_the_metadata(gate, tmp_path):
    folder = tmp_path / "gone"
    folder.mkdir()
    x, y, out = tensors()
    armed = profiler.arm("steps:0-0,2-2", name=str(folder / "e"))
    one_step(0, x, y, out)  # window 1 closes; its write is held
    assert gate.entered.wait(WAIT_S)
    shutil.rmtree(folder)  # the write fails for real: its folder is not there
    gate.opened.set()
    wait_for_windows()
    folder.mkdir()
    with pytest.warns(UserWarning, match=r"window 1 was not written: writing part .*e\.part1\.hatchet failed"):
        one_step(1, x, y, out)
    assert armed.failed_windows == 1 and part_writer.failed == []  # warned of as the window's only
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned of once
        one_step(2, x, y, out)
        profiler.disarm()
    meta = load_json(folder / "e.meta.json")
    assert meta["parts"] == [str(folder / "e.part2.hatchet")] and meta["part_steps"] == [[2]]
    assert [f["path"] for f in meta["failed_parts"]] == [str(folder / "e.part1.hatchet")]
    assert [w["parts"] for w in meta["windows"]] == [[], [str(folder / "e.part2.hatchet")]]
    assert meta["failed_windows"] == 1 and sorted(os.listdir(folder)) == ["e.meta.json", "e.part2.hatchet"]


def test_disarm_warns_of_the_last_windows_failed_write(gate, tmp_path):
    folder = tmp_path / "gone"
    folder.mkdir()
    x, y, out = tensors()
    profiler.arm("steps:0-9", name=str(folder / "x"))
    one_step(0, x, y, out)

    def remove_then_release():
        if gate.entered.wait(WAIT_S):
            shutil.rmtree(folder)
        gate.opened.set()

    threading.Thread(target=remove_then_release).start()
    with pytest.warns(UserWarning, match=r"window 1 was not written: writing part .*x\.part1\.hatchet failed"):
        profiler.disarm()
    assert not folder.exists()


def test_interpreter_exit_writes_every_window(tmp_path):
    # A script that never disarms, whose writer is slow: at exit, both windows are written. The
    # first atexit handler registered runs last: it says what the writer thread was given.
    script = tmp_path / "leaves.py"
    script.write_text(textwrap.dedent(f"""
        import atexit, os, sys, time
        seen = []
        atexit.register(lambda: print("held", *seen))
        sys.path.insert(0, {TESTS!r})
        import flagtree.profiler as profiler
        from flagtree.profiler import part_writer
        from support.kernels import launch_add, tensors
        part_writer.hold = lambda job: (time.sleep(0.3), seen.append(os.path.basename(job.path)))
        x, y, out = tensors()
        profiler.arm("steps:0-0,2-9", name="x")
        for _ in range(4):
            launch_add(x, y, out)
            profiler.step()
    """))
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("FLAGTREE_PROFILER_TRIGGER", None)
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["held", "x.part1.hatchet", "x.meta.json", "x.part2.hatchet", "x.meta.json"]
    meta = load_json(tmp_path / "x.meta.json")
    assert meta["parts"] == ["x.part1.hatchet", "x.part2.hatchet"]
    assert [w["closed_by"] for w in meta["windows"]] == ["steps", "exit"]
    assert [sum(kernel_counts(load_tree(tmp_path / p)[0]).values()) for p in meta["parts"]] == [1, 2]
