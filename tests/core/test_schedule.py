"""schedule() and step() on the CPU: real Triton kernels through the interpreter backend; each
step launches under its own scope, so a part shows which steps it holds."""
import glob
import threading

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import session as _session
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def run_steps(sid, count, x, y, out):
    written = []
    for k in range(count):
        with profiler.scope(f"step{k}"):
            launch_add(x, y, out)
        written += profiler.step(sid)
    return written


def steps_in(path):
    return sorted(int(p[0][4:]) for p in kernel_counts(load_tree(path)[0]))


def test_each_active_window_is_one_part_with_its_steps(tmp_path):
    x, y, out = tensors()
    plan = profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    sid = profiler.start(str(tmp_path / "s"), schedule=plan)
    written = run_steps(sid, 12, x, y, out)
    profiler.finalize(sid)
    parts = [str(tmp_path / f"s.part{k}.hatchet") for k in (1, 2, 3)]
    assert written == parts[:2]
    # step 0 skipped; cycles of 4 from step 1: wait 1, warmup 2, active 3-4; wait 5, warmup 6, active 7-8
    assert steps_in(parts[0]) == [3, 4]
    assert steps_in(parts[1]) == [7, 8]
    assert kernel_counts(load_tree(parts[0])[0]) == {("step3", "add_kernel"): 1, ("step4", "add_kernel"): 1}
    # after repeat windows nothing is collected: the last part (finalize's) is empty
    assert steps_in(parts[2]) == []
    assert sorted(glob.glob(str(tmp_path / "s*.hatchet"))) == sorted(parts)
    assert load_tree(parts[0])[0]["steps"] == [3, 4]
    meta = load_json(tmp_path / "s.meta.json")
    assert meta["parts"] == parts
    assert meta["part_steps"] == [[3, 4], [7, 8], []]
    assert meta["schedule"] == "schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)"
    merged = profiler.read(parts)
    assert merged is not None


def test_repeat_zero_collects_until_finalize(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "r"), schedule=profiler.schedule(wait=1, active=1))
    written = run_steps(sid, 6, x, y, out)
    with profiler.scope("tail"):
        launch_add(x, y, out)  # step 6: wait, not recorded
    profiler.finalize(sid)
    assert [steps_in(p) for p in written] == [[1], [3], [5]]
    meta = load_json(tmp_path / "r.meta.json")
    assert meta["part_steps"] == [[1], [3], [5], []]


def test_window_cut_by_finalize_keeps_its_steps(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "c"), data="tree,trace", schedule=profiler.schedule(active=3))
    written = run_steps(sid, 5, x, y, out)
    profiler.finalize(sid)
    assert written == [str(tmp_path / "c.part1.hatchet"), str(tmp_path / "c.part1.chrome_trace")]
    assert steps_in(tmp_path / "c.part2.hatchet") == [3, 4]
    meta = load_json(tmp_path / "c.meta.json")
    # step 5 had begun (no launches yet) when finalize cut the window
    assert dict(zip(meta["parts"], meta["part_steps"]))[str(tmp_path / "c.part2.chrome_trace")] == [3, 4, 5]
    assert load_json(tmp_path / "c.part1.chrome_trace")["otherData"]["steps"] == [0, 1, 2]


def test_step_without_a_schedule_does_nothing(tmp_path):
    x, y, out = tensors()
    assert profiler.step() == []  # nothing open
    sid = profiler.start(str(tmp_path / "n"))
    written = run_steps(sid, 3, x, y, out)
    assert profiler.step() == []
    profiler.finalize(sid)
    assert written == []
    assert steps_in(tmp_path / "n.hatchet") == [0, 1, 2]
    assert "part_steps" not in load_json(tmp_path / "n.meta.json")


@pytest.mark.parametrize("arguments, message", [
    ({"active": 0}, "active=0: active must be at least 1"),
    ({"wait": -1}, "wait=-1: wait must be 0 or more"),
    ({"repeat": 1.5}, "repeat must be an int"),
    ({"skip_first": True}, "skip_first must be an int"),
])
def test_bad_schedule_arguments_raise(arguments, message):
    with pytest.raises(ValueError, match=message):
        profiler.schedule(**arguments)


def test_start_rejects_what_schedule_did_not_make(tmp_path):
    with pytest.raises(ValueError, match="schedule= takes"):
        profiler.start(str(tmp_path / "b"), schedule=lambda step: True)
    assert profiler.session.open_sessions() == []


def test_step_of_an_unknown_session_raises_unless_profiling_is_off(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="no open profiling session"):
        profiler.step(12345)
    monkeypatch.setenv("FLAGTREE_PROFILER_DISABLE", "1")
    assert profiler.step(12345) == [] and profiler.step() == []


@pytest.mark.parametrize("wait, warmup, active, repeat, skip_first", [
    (0, 0, 1, 0, 0), (3, 0, 2, 0, 0), (2, 1, 3, 2, 0), (0, 2, 1, 1, 4), (5, 0, 1, 3, 2), (1, 1, 1, 0, 7)])
def test_next_active_is_the_first_active_step_from_a_step(wait, warmup, active, repeat, skip_first):
    plan = profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)
    horizon = skip_first + (wait + warmup + active) * 6
    for step in range(horizon - (wait + warmup + active)):
        expected = next((s for s in range(step, horizon) if plan.action(s) == "active"), None)
        assert plan.next_active(step) == expected, step


def test_steps_between_windows_only_count(tmp_path, monkeypatch):
    from flagtree.profiler import schedule_steps

    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "q"), schedule=profiler.schedule(wait=50, active=2, repeat=2))
    applied = []
    real = schedule_steps.set_active
    monkeypatch.setattr(schedule_steps, "set_active", lambda s, on: (applied.append(on), real(s, on)))
    written = run_steps(sid, 120, x, y, out)
    profiler.finalize(sid)
    assert [steps_in(p) for p in written] == [[50, 51], [102, 103]]
    # the step after the first stretch's PACE_STEPS (its pace measured), entering each window,
    # its second step, leaving it (the steps after a window's end apply the schedule once), and
    # nothing for the steps in between
    assert applied == [False] + [True, True, False, False] * 2


def test_activate_by_hand_between_windows_lasts_until_the_next_step(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "h"), schedule=profiler.schedule(wait=10, active=1))
    for step in range(12):
        if step in (2, 6):
            profiler.activate(sid)  # step 2 and 6 recorded: the step after each applies the schedule again
        with profiler.scope(f"step{step}"):
            launch_add(x, y, out)
        profiler.step(sid)
    profiler.finalize(sid)
    assert steps_in(tmp_path / "h.part1.hatchet") == [2, 6, 10]


def test_step_with_nothing_open_reads_no_environment(monkeypatch):
    """A program armed and idle, or one that keeps its step() calls with profiling off, calls step()
    every step: with nothing open it is a no-op, not a read of the environment."""
    from flagtree.profiler.distributed import ranks

    reads = []
    real = ranks.profiling_off
    monkeypatch.setattr(ranks, "profiling_off", lambda: reads.append(1) or real())
    for _ in range(100):
        assert profiler.step() == []
    assert reads == []
    with pytest.raises(ValueError, match="no open profiling session"):  # an id is still checked
        profiler.step(12345)
    assert reads == [1]


def test_quiet_steps_wait_for_no_lock_and_each_thread_step_counts_once(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "q"), schedule=profiler.schedule(wait=401, active=1))

    def steps(count):
        for _ in range(count):
            assert profiler.step(sid) == []

    steps(40)  # past the first stretch's pace, reckoned under the lock at its 32nd step
    with _session._lock:  # the sessions' lock, held: a quiet step() goes on without it
        threads = [threading.Thread(target=steps, args=(90,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        assert not any(t.is_alive() for t in threads)
    assert profiler.step(sid) == []  # step 400 ends: step 401 is the window's
    written = run_steps(sid, 2, x, y, out)
    profiler.finalize(sid)
    assert written == [str(tmp_path / "q.part1.hatchet")]
    assert load_json(tmp_path / "q.meta.json")["part_steps"][0] == [401]
    assert kernel_counts(load_tree(written[0])[0]) == {("step0", "add_kernel"): 1}


def test_a_window_beyond_any_count_is_never_reached(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "far"), schedule=profiler.schedule(skip_first=2 ** 70, active=1))
    assert run_steps(sid, 3, x, y, out) == []
    profiler.finalize(sid)
    assert kernel_counts(load_tree(str(tmp_path / "far.hatchet"))[0]) == {}
    assert load_json(tmp_path / "far.meta.json")["schedule"].endswith(f"skip_first={2 ** 70})")


@pytest.mark.parametrize("plan", [profiler.schedule(skip_first=1), profiler.schedule(wait=1)])
def test_a_launch_on_another_thread_while_start_runs_is_not_recorded_before_the_first_step(tmp_path, monkeypatch,
                                                                                          plan):
    x, y, out = tensors()

    def start_backend(session, **kwargs):  # another thread launches while the session is being started
        started(session, **kwargs)
        beside = threading.Thread(target=launch_add, args=(x, y, out))
        beside.start()
        beside.join()

    started = _session.start_backend
    monkeypatch.setattr(_session, "start_backend", start_backend)
    sid = profiler.start(str(tmp_path / "b"), data="tree,trace", schedule=plan)
    monkeypatch.undo()
    launch_add(x, y, out)  # step 0 is not recorded either
    profiler.finalize(sid)
    assert kernel_counts(load_tree(tmp_path / "b.hatchet")[0]) == {}
    assert not [e for e in load_json(tmp_path / "b.chrome_trace")["traceEvents"] if e.get("cat") == "kernel"]
