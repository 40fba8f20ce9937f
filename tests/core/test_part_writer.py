"""Parts written off the caller's thread (part_writer.py): step() and flush_part() return before
the file is written, finalize waits for it, parts are written in order, a failed write is
reported, the number of parts waiting is bounded, and memory stays flat over a long scheduled run.
The writer is made observably slow through part_writer.hold, its seam for tests."""
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native, part_writer
from flagtree.profiler.session import find_session
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree, metrics_by_path

WAIT_S = 30  # a bound on waits that end at once when the code works
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    part_writer.hold = None
    profiler.finalize()


class Gate:
    """Holds the writer thread before each write until opened; records what it was given."""

    def __init__(self):
        self.opened = threading.Event()
        self.entered = threading.Event()
        self.seen = []

    def __call__(self, job):
        self.seen.append(job.path)
        self.entered.set()
        assert self.opened.wait(WAIT_S)


def hold_writer():
    gate = Gate()
    part_writer.hold = gate
    return gate


def jobs_of(sid):
    return find_session(sid).part_jobs


def test_step_returns_before_the_part_is_written(tmp_path):
    x, y, out = tensors()
    gate = hold_writer()
    sid = profiler.start(str(tmp_path / "s"), schedule=profiler.schedule(wait=1, active=2))
    written = []
    for k in range(3):
        with profiler.scope(f"step{k}"):
            launch_add(x, y, out)
        written += profiler.step(sid)
    assert written == [str(tmp_path / "s.part1.hatchet")]
    assert gate.entered.wait(WAIT_S)  # the writer has the part, and is held
    assert not os.path.exists(written[0])
    gate.opened.set()
    part_writer.wait(jobs_of(sid))
    root, _ = load_tree(written[0])
    assert kernel_counts(root) == {("step1", "add_kernel"): 1, ("step2", "add_kernel"): 1}
    assert root["steps"] == [1, 2]


def test_flush_part_of_a_trace_returns_before_it_is_written(tmp_path):
    x, y, out = tensors()
    gate = hold_writer()
    sid = profiler.start(str(tmp_path / "t"), data="trace")
    with profiler.scope("a"):
        launch_add(x, y, out)
    (path,) = profiler.flush_part(sid)
    assert gate.entered.wait(WAIT_S) and not os.path.exists(path)
    launch_add(x, y, out)  # after the part was taken: the next part's
    gate.opened.set()
    part_writer.wait(jobs_of(sid))
    events = [e for e in load_json(path)["traceEvents"] if e.get("cat") in ("kernel", "scope")]
    assert sorted(e["name"] for e in events) == ["a", "add_kernel"]


def first_part_held(base):
    """A session at `base` whose first part (one launch) the writer thread holds: (id, part, gate)."""
    x, y, out = tensors()
    gate = hold_writer()
    sid = profiler.start(str(base))
    launch_add(x, y, out)
    (first,) = profiler.flush_part(sid)
    assert gate.entered.wait(WAIT_S)
    return sid, first, gate


def test_finalize_waits_for_pending_parts_and_times_each_part(tmp_path):
    sid, first, gate = first_part_held(tmp_path / "f")
    threading.Timer(0.2, gate.opened.set).start()
    profiler.finalize(sid)  # returns only once the held part is written
    assert os.path.exists(first)
    meta = load_json(tmp_path / "f.meta.json")
    assert meta["parts"] == [first, str(tmp_path / "f.part2.hatchet")]
    assert [sorted(t) for t in meta["part_times"]] == [["caller_ns", "queue_wait_ns", "write_ns"]] * 2
    assert all(isinstance(v, int) and v >= 0 for t in meta["part_times"] for v in t.values())
    assert meta["part_queue_waits"] == 0
    assert sum(kernel_counts(load_tree(first)[0]).values()) == 1


def test_finalize_whose_backend_outputs_fail_still_waits_for_pending_parts(tmp_path, monkeypatch):
    sid, first, gate = first_part_held(tmp_path / "b")

    def failing(session):
        raise RuntimeError("the backend's outputs failed")

    monkeypatch.setattr(find_session(sid).backend, "session_outputs", failing)
    threading.Timer(0.2, gate.opened.set).start()
    with pytest.raises(RuntimeError, match="the backend's outputs failed"):
        profiler.finalize(sid)
    assert os.path.exists(first)  # written before finalize returned, not after
    assert not [job for job in part_writer.failed if job.path == first]


def test_flush_part_waits_when_asked(tmp_path):
    gate = hold_writer()
    sid = profiler.start(str(tmp_path / "w"))
    _record("k")
    threading.Timer(0.2, gate.opened.set).start()
    (path,) = profiler.flush_part(sid, wait=True)
    assert gate.entered.is_set() and os.path.exists(path)
    assert kernel_counts(load_tree(path)[0]) == {("k",): 1}


def test_flush_part_that_waits_raises_a_failed_write(tmp_path):
    folder = tmp_path / "gone"
    folder.mkdir()
    sid = profiler.start(str(folder / "w"))
    shutil.rmtree(folder)
    with pytest.raises(RuntimeError, match=r"writing part .*w\.part1\.hatchet failed, its data are lost"):
        profiler.flush_part(sid, wait=True)
    folder.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # raised already: not warned of again
        profiler.flush_part(sid)
    with pytest.raises(RuntimeError, match=r"1 parts of session"):
        profiler.finalize(sid)


def test_parts_are_written_in_order(tmp_path):
    x, y, out = tensors()
    gate = hold_writer()
    gate.opened.set()  # not held: only watched
    sid = profiler.start(str(tmp_path / "o"), data="tree,trace", schedule=profiler.schedule(active=1))
    for k in range(3):
        with profiler.scope(f"step{k}"):
            for _ in range(k + 1):
                launch_add(x, y, out)
        profiler.step(sid)
    profiler.finalize(sid)
    trees = [str(tmp_path / f"o.part{k}.hatchet") for k in (1, 2, 3)]
    traces = [p.replace(".hatchet", ".chrome_trace") for p in trees]
    assert gate.seen == [p for pair in zip(trees, traces) for p in pair]
    assert [kernel_counts(load_tree(p)[0]) for p in trees] == [
        {(f"step{k}", "add_kernel"): k + 1} for k in range(3)]
    assert load_json(tmp_path / "o.meta.json")["part_steps"] == [[0], [1], [2], [3]] * 2


def test_callers_wait_when_the_pending_parts_are_at_their_bound(tmp_path):
    gate = hold_writer()
    sid = profiler.start(str(tmp_path / "b"))
    session = find_session(sid)  # not while a caller waits: it holds the sessions' lock
    for _ in range(part_writer.MAX_PENDING):
        profiler.flush_part(sid)
    one_more = threading.Thread(target=profiler.flush_part, args=(sid,))
    one_more.start()
    one_more.join(0.5)
    assert one_more.is_alive()  # waits for room: MAX_PENDING parts are taken and unwritten
    assert [j.finished for j in session.part_jobs] == [False] * (part_writer.MAX_PENDING + 1)
    gate.opened.set()
    one_more.join(WAIT_S)
    assert not one_more.is_alive()
    profiler.finalize(sid)
    meta = load_json(tmp_path / "b.meta.json")
    assert meta["part_queue_waits"] == 1
    assert [t["queue_wait_ns"] > 0 for t in meta["part_times"]] == [False] * 4 + [True, False]


def test_a_failed_write_is_warned_of_and_raised_at_finalize(tmp_path):
    folder = tmp_path / "gone"
    folder.mkdir()
    gate = hold_writer()
    sid = profiler.start(str(folder / "e"))
    (lost,) = profiler.flush_part(sid)
    assert gate.entered.wait(WAIT_S)
    shutil.rmtree(folder)  # the write fails for real: its folder is not there
    gate.opened.set()
    part_writer.wait(jobs_of(sid))
    folder.mkdir()
    with pytest.warns(UserWarning, match=r"writing part .*e\.part1\.hatchet failed, its data are lost"):
        (kept,) = profiler.flush_part(sid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned of once
        profiler.flush_part(sid)
    with pytest.raises(RuntimeError, match=r"1 parts of session .* were not written"):
        profiler.finalize(sid)
    assert not os.path.exists(lost) and os.path.exists(kept)
    meta = load_json(folder / "e.meta.json")
    assert meta["parts"] == [kept] + [str(folder / f"e.part{k}.hatchet") for k in (3, 4)]
    assert [f["path"] for f in meta["failed_parts"]] == [lost]
    assert len(meta["part_times"]) == len(meta["parts"])


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _record(name):
    t = _native.core.monotonic_ns()
    _native.session.record_host_kernel(name, t, t + 500, (1, 1, 1), (32, 1, 1))


# 100,000 steps, a window of 20 every 500 (200 parts of each kind), 100 records a recorded step:
# kept unfreed, the trace's 400,000 events would outgrow the limit (docs/performance.md). What may grow
# is the per-part bookkeeping the metadata lists (paths, steps, times): kilobytes a part.
STEPS, RECORDS, GROWTH_LIMIT = 100_000, 100, 8 << 20


def test_memory_stays_flat_over_100000_scheduled_steps(tmp_path):
    sid = profiler.start(str(tmp_path / "m"), data="tree,trace", schedule=profiler.schedule(wait=480, active=20))
    after_first = None
    for k in range(STEPS):
        if k % 500 >= 480:
            with profiler.scope(f"layer{k % 3}"):
                for _ in range(RECORDS):
                    _record("k")
        profiler.step(sid)
        if k == 999:  # two windows in: the allocator has seen a part's worth of everything
            part_writer.wait(jobs_of(sid))
            after_first = _rss_bytes()
    part_writer.wait(jobs_of(sid))
    growth = _rss_bytes() - after_first
    profiler.finalize(sid)
    meta = load_json(tmp_path / "m.meta.json")
    assert len(meta["parts"]) == 2 * (STEPS // 500 + 1)
    assert meta["kernel_records"] == STEPS // 500 * 20 * RECORDS
    assert growth < GROWTH_LIMIT, f"RSS grew by {growth / 2**20:.1f} MiB over {STEPS} steps"


def test_a_taken_part_leaves_the_session_and_is_written_once(tmp_path):
    sid = profiler.start(str(tmp_path / "n"))
    with profiler.scope("before"):
        _record("k")
    taken = _native.dump.session_take_part(find_session(sid).slot)
    with profiler.scope("after"):
        _record("k")
    assert taken.write(str(tmp_path / "taken.hatchet")) > 0
    with pytest.raises(RuntimeError, match="already written"):
        taken.write(str(tmp_path / "again.hatchet"))
    profiler.finalize(sid)
    assert kernel_counts(load_tree(tmp_path / "taken.hatchet")[0]) == {("before", "k"): 1}
    # the whole-run file keeps the taken part's nodes (threads cache them), without metrics
    metrics = {p: m for p, m in metrics_by_path(tmp_path / "n.hatchet").items() if p[-1] == "k"}
    assert metrics[("after", "k")]["count"] == 1 and "count" not in metrics[("before", "k")]
    assert not os.path.exists(tmp_path / "again.hatchet")


def test_interpreter_exit_waits_for_pending_parts(tmp_path):
    # A script that never finalizes, whose writer is slow: its atexit finalize waits for every part.
    script = tmp_path / "leaves.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {TESTS!r})
        import flagtree.profiler as profiler
        from flagtree.profiler import part_writer
        from support.kernels import launch_add, tensors
        part_writer.hold = lambda job: time.sleep(0.3)
        x, y, out = tensors()
        sid = profiler.start("x", schedule=profiler.schedule(active=1))
        for _ in range(3):
            launch_add(x, y, out)
            profiler.step(sid)
    """))
    env = dict(os.environ, TRITON_INTERPRET="1")
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    parts = [f"x.part{k}.hatchet" for k in (1, 2, 3, 4)]
    assert load_json(tmp_path / "x.meta.json")["parts"] == parts
    assert [sum(kernel_counts(load_tree(tmp_path / p)[0]).values()) for p in parts] == [1, 1, 1, 0]
