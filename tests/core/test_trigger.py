"""arm() and its windows, in process: real Triton kernels through the interpreter backend, each
step under its own scope so that a part shows which steps it holds; real signals sent to this
process, a real file touched, the watcher thread's timer."""
import os
import signal
import threading
import time

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import session as _session
from flagtree.profiler.run_id import run_id_of
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree


@pytest.fixture(autouse=True)
def disarmed(monkeypatch):
    for name in ("FLAGTREE_PROFILER_TRIGGER", "FLAGTREE_PROFILER_WINDOW"):
        monkeypatch.delenv(name, raising=False)
    yield
    profiler.disarm()
    profiler.finalize()


def steps_in(path):
    return sorted(int(p[0][4:]) for p in kernel_counts(load_tree(path)[0]))


def one_step(k, x, y, out, during=None):
    with profiler.scope(f"step{k}"):
        launch_add(x, y, out)
        if during is not None:
            during()
    return profiler.step()


def signal_self():
    os.kill(os.getpid(), signal.SIGUSR1)  # the handler runs before the next bytecode here


def test_step_ranges_are_windows_one_part_each(tmp_path):
    x, y, out = tensors()
    armed = profiler.arm("steps:1-2,4-4", name=str(tmp_path / "w"))
    written = [one_step(k, x, y, out) for k in range(6)]
    assert profiler.disarm() == []
    parts = [str(tmp_path / "w.part1.hatchet"), str(tmp_path / "w.part2.hatchet")]
    assert written == [[], [], parts[:1], [], parts[1:], []]
    assert [steps_in(p) for p in parts] == [[1, 2], [4]]
    assert sorted(os.listdir(tmp_path)) == ["w.meta.json", "w.part1.hatchet", "w.part2.hatchet"]
    meta = load_json(tmp_path / "w.meta.json")
    assert meta["parts"] == parts and meta["part_steps"] == [[1, 2], [4]]
    assert meta["trigger"] == "steps:1-2,4-4" and meta["trigger_window"] is None
    assert [(w["window"], w["steps"], w["opened_at"], w["closed_by"]) for w in meta["windows"]] == [
        (1, [1, 2], "step()", "steps"), (2, [4], "step()", "steps")]
    assert {run_id_of(p) for p in parts} == {meta["run_id"]}  # one run: the viewer takes the metadata
    assert armed.files == parts and armed.step == 6


def test_a_range_from_step_zero_opens_at_arm_and_exit_closes_a_window(tmp_path):
    x, y, out = tensors()
    profiler.arm("steps:0-0,2-9", name=str(tmp_path / "z"), data="tree,trace")
    for k in range(4):
        one_step(k, x, y, out)
    assert _session.open_sessions() != []  # the second window is open
    written = profiler.disarm()
    assert written == [str(tmp_path / "z.part2.hatchet"), str(tmp_path / "z.part2.chrome_trace")]
    meta = load_json(tmp_path / "z.meta.json")
    assert [(w["steps"], w["opened_at"], w["closed_by"]) for w in meta["windows"]] == [
        ([0], "arm()", "steps"), ([2, 3, 4], "step()", "exit")]  # step 4 had begun: in progress
    assert meta["parts"] == [str(tmp_path / f"z.part{k}.{e}") for e in ("hatchet", "chrome_trace") for k in (1, 2)]
    assert meta["part_steps"] == [[0], [2, 3, 4], [0], [2, 3, 4]]
    assert steps_in(tmp_path / "z.part2.hatchet") == [2, 3]
    assert _session.open_sessions() == []


def test_a_signal_opens_a_steps_window_at_the_next_step_and_a_second_one_is_ignored(tmp_path):
    x, y, out = tensors()
    armed = profiler.arm("signal", "steps=2", name=str(tmp_path / "s"))
    assert signal.getsignal(signal.SIGUSR1) not in (signal.SIG_DFL, signal.SIG_IGN)
    one_step(0, x, y, out)
    one_step(1, x, y, out, during=signal_self)  # opens at the end of step 1: steps 2 and 3
    one_step(2, x, y, out, during=signal_self)  # during the window: ignored, counted
    assert one_step(3, x, y, out) == [str(tmp_path / "s.part1.hatchet")]
    one_step(4, x, y, out)
    one_step(5, x, y, out, during=signal_self)
    one_step(6, x, y, out)
    profiler.disarm()
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL
    assert steps_in(tmp_path / "s.part1.hatchet") == [2, 3]
    assert steps_in(tmp_path / "s.part2.hatchet") == [6]
    meta = load_json(tmp_path / "s.meta.json")
    assert [(w["steps"], w["closed_by"]) for w in meta["windows"]] == [([2, 3], "steps"), ([6, 7], "exit")]
    assert meta["ignored_triggers"] == 1 == armed.ignored_triggers
    assert meta["trigger"] == "signal:SIGUSR1" and meta["trigger_window"] == "steps=2"


def test_a_touched_file_opens_a_window(tmp_path):
    x, y, out = tensors()
    go = tmp_path / "go"
    go.write_text("")  # there before arm(): only a later change is a trigger
    profiler.arm(f"file:{go}", "steps=1", name=str(tmp_path / "f"))
    one_step(0, x, y, out)

    def touch():
        time.sleep(0.05)
        os.utime(go, ns=(time.time_ns(), time.time_ns()))
        time.sleep(0.6)  # past the 0.5 s between reads: the next step() reads it if the watcher did not

    one_step(1, x, y, out, during=touch)
    one_step(2, x, y, out)
    one_step(3, x, y, out)
    go.unlink()  # removing it is no trigger
    one_step(4, x, y, out, during=lambda: time.sleep(0.6))
    profiler.disarm()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.meta.json", "f.part1.hatchet"]
    assert steps_in(tmp_path / "f.part1.hatchet") == [2]
    assert load_json(tmp_path / "f.meta.json")["trigger"] == f"file:{go}"


def test_a_seconds_window_opens_and_closes_on_the_watcher_thread_without_step(tmp_path):
    x, y, out = tensors()
    armed = profiler.arm("signal:USR2", "seconds=0.5", name=str(tmp_path / "t"))
    launch_add(x, y, out)  # idle: not recorded
    os.kill(os.getpid(), signal.SIGUSR2)
    deadline = time.monotonic() + 60
    while not armed.windows and time.monotonic() < deadline:
        with profiler.scope("busy"):
            launch_add(x, y, out)
    assert len(armed.windows) == 1
    window = armed.windows[0]
    assert (window["opened_at"], window["closed_by"]) == ("watcher thread", "seconds")
    assert window["stop_time_ns"] - window["start_time_ns"] >= 0.5e9
    assert window["steps"] == [0]  # no step() was called: step 0 was in progress throughout
    profiler.disarm()  # the window's part is written on the writer thread: disarm() waits for it
    counts = kernel_counts(load_tree(tmp_path / "t.part1.hatchet")[0])
    assert set(counts) == {("busy", "add_kernel")}  # the launch before the signal is not there
    assert load_json(tmp_path / "t.meta.json")["windows"] == [window]


def test_armed_and_idle_opens_nothing_and_writes_nothing(tmp_path):
    from flagtree.profiler.triton_glue.interpreter import launch_entry

    x, y, out = tensors()
    run_before = launch_entry()
    armed = profiler.arm("signal", "steps=1", name=str(tmp_path / "sub" / "idle"))
    for k in range(3):
        one_step(k, x, y, out)
        assert _session.open_sessions() == []
        assert launch_entry() is run_before  # no launch hook
    assert [t.name for t in threading.enumerate()].count("flagtree-profiler-trigger") == 1
    assert profiler.disarm() == [] and armed.windows == []
    assert not (tmp_path / "sub").exists()  # not even its folder
    assert "flagtree-profiler-trigger" not in [t.name for t in threading.enumerate()]


def test_the_environment_arms_and_arm_says_its_errors(tmp_path, monkeypatch):
    x, y, out = tensors()
    monkeypatch.setenv("FLAGTREE_PROFILER_TRIGGER", "steps:1-1")
    profiler.arm(name=str(tmp_path / "e"))
    with pytest.raises(RuntimeError, match="already armed"):
        profiler.arm("signal")
    for k in range(3):
        one_step(k, x, y, out)
    profiler.disarm()
    assert steps_in(tmp_path / "e.part1.hatchet") == [1]
    monkeypatch.delenv("FLAGTREE_PROFILER_TRIGGER")
    with pytest.raises(ValueError, match="no trigger"):
        profiler.arm()


@pytest.mark.parametrize("trigger, window, message", [
    ("signal:KILL", None, "not a signal a trigger takes"),
    ("signal:TERM", None, "not a signal a trigger takes"),
    ("file:", None, "is none of"),
    ("steps:3-1", None, "0 <= A <= B"),
    ("steps:1-3,3-4", None, "ascend without overlapping"),
    ("steps:1-2", "steps=2", "is its own window"),
    ("clock:5", None, "is none of"),
    ("signal", "steps=0", "at least 1 step"),
    ("signal", "seconds=nan", "above 0"),
    ("signal", "minutes=1", "not one of"),
])
def test_bad_trigger_and_window_texts_raise(trigger, window, message):
    with pytest.raises(ValueError, match=message):
        profiler.arm(trigger, window)
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


def test_a_signal_the_program_handles_is_refused(tmp_path):
    previous = signal.signal(signal.SIGUSR2, lambda *a: None)
    try:
        with pytest.raises(ValueError, match="SIGUSR2 already has a handler"):
            profiler.arm("signal:USR2", name=str(tmp_path / "r"))
        profiler.arm("signal:USR1", name=str(tmp_path / "r"))  # another one is fine
    finally:
        signal.signal(signal.SIGUSR2, previous)


def test_profile_takes_a_schedule(tmp_path):
    x, y, out = tensors()

    def run(count):
        for k in range(count):
            one_step(k, x, y, out)

    profiler.profile(run, name=str(tmp_path / "p"), schedule=profiler.schedule(wait=1, active=1, repeat=2))(4)
    meta = load_json(tmp_path / "p.meta.json")
    assert meta["part_steps"] == [[1], [3], []]
    assert [steps_in(p) for p in meta["parts"]] == [[1], [3], []]


def test_the_programs_own_finalize_writes_an_open_window_as_its_part(tmp_path):
    x, y, out = tensors()
    armed = profiler.arm("steps:0-5", name=str(tmp_path / "o"))
    one_step(0, x, y, out)
    profiler.finalize()  # closes every open session, the window's too
    one_step(1, x, y, out)
    assert profiler.disarm() == [str(tmp_path / "o.part1.hatchet")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.meta.json", "o.part1.hatchet"]
    assert steps_in(tmp_path / "o.part1.hatchet") == [0]
    assert armed.windows[0]["closed_by"] == "finalize()"
    assert load_json(tmp_path / "o.meta.json")["trigger"] == "steps:0-5"


def test_a_forked_child_is_not_armed(tmp_path):
    profiler.arm("steps:0-3", name=str(tmp_path / "k"))
    pid = os.fork()
    if pid == 0:  # the child: its step() counts nothing, its exit writes nothing
        code = 0 if profiler.trigger.armed() is None and profiler.step() == [] else 1
        os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0
    assert profiler.trigger.armed() is not None
    profiler.disarm()
    assert [w["steps"] for w in load_json(tmp_path / "k.meta.json")["windows"]] == [[0]]


def test_idle_steps_wait_for_no_lock_and_each_thread_step_counts_once(tmp_path):
    x, y, out = tensors()
    armed = profiler.arm("steps:401-401", name=str(tmp_path / "t"))

    def steps():
        for _ in range(100):
            assert profiler.step() == []

    with armed._lock:  # the watcher's lock, held: an idle step() goes on without it
        threads = [threading.Thread(target=steps) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        assert not any(t.is_alive() for t in threads)
    assert armed.step == 400 and armed.windows == []
    assert profiler.step() == [] and _session.open_sessions() != []  # the window opens for step 401
    parts = one_step(401, x, y, out)
    assert parts == [str(tmp_path / "t.part1.hatchet")] and armed.windows[0]["steps"] == [401]
    profiler.disarm()  # waits for the writer thread
    assert steps_in(parts[0]) == [401]


def test_disarm_from_another_thread_leaves_the_signal_free_to_arm_again(tmp_path):
    # Only the main thread can put the signal's handler back: one left by a disarm() elsewhere
    # must count nothing (its pipe is closed, its descriptor may be reused) and not refuse arm().
    profiler.arm("signal:USR2", "steps=1", name=str(tmp_path / "w"))
    thread = threading.Thread(target=profiler.disarm)
    thread.start()
    thread.join()
    os.kill(os.getpid(), signal.SIGUSR2)  # the handler left behind does nothing
    armed = profiler.arm("signal:USR2", "steps=1", name=str(tmp_path / "v"))
    os.kill(os.getpid(), signal.SIGUSR2)
    profiler.step()
    profiler.step()
    profiler.disarm()
    assert [w["steps"] for w in armed.windows] == [[1]]
    assert signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL


def test_step_of_a_window_session_id_that_closes_it_does_not_raise(tmp_path):
    # step() closes the window before it looks the id up: an id open at the call is no bad id.
    profiler.arm("steps:0-0", name=str(tmp_path / "w"))
    (window_id,) = _session.open_sessions()
    assert profiler.step(window_id) == [str(tmp_path / "w.part1.hatchet")]
    assert _session.open_sessions() == []
    with pytest.raises(ValueError):
        profiler.step(window_id)  # closed by then: a bad id as any other
