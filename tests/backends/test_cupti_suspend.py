"""A quiet CUPTI let go while sessions hold it (csrc/backends/dialect/dialect_tracer_quiet.h,
DialectTracer::suspend), on the CPU: the real nvidia backend and native tracer against
tests/standins/cupti_activity_standin.c, whose cuptiFinalize drops the subscription, the enabled
kinds and the dropped counts, starts correlation ids over, and whose every call after it counts as
a re-initialization ("init"). FLAGTREE_PROFILER_CUPTI_IDLE_S is the idle time quiet before the
suspend: 0 here unless a test says otherwise."""
import os
import subprocess
import sys
import time

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from test_cupti_attach import count, kernel_count, nvidia_on_standin, standin  # noqa: F401 (fixtures)
from vendor_outputs import find, kernels, load_meta, load_tree
from support.cupti_suspend import stats, wait_suspended


@pytest.fixture(autouse=True)
def suspend_at_once(monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0")


SUSPEND_WAIT_S = 5.0  # a bound on a wait that ends at once when the code works


def start(base, **options):
    return profiler.start(name=str(base), backend="nvidia", **options)


def launches(lib, n):
    return [lib.standin_launch() for _ in range(n)]


def records(base):
    meta = load_meta(base)
    return meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]


def test_a_deactivated_session_is_let_go_with_its_records_delivered(standin, tmp_path):
    sid = start(tmp_path / "a")
    launches(standin, 3)  # their records wait in the library's buffer
    suspensions, finalizes = stats()["suspensions"], count(standin, "finalize")
    profiler.deactivate(sid)
    assert wait_suspended(SUSPEND_WAIT_S)
    st = stats()
    assert st["running"] and st["quiet"] and not st["parked"] and st["suspensions"] == suspensions + 1
    assert st["last_suspend_ns"] > 0
    assert not standin.standin_subscribed() and count(standin, "finalize") == finalizes + 1
    inits = count(standin, "init")
    launches(standin, 4)  # nobody's: nothing of the library runs
    profiler.finalize()  # nothing left to flush: no call re-initializes the library
    assert count(standin, "init") == inits
    assert count(standin, "finalize") == finalizes + 1  # the release does not stop it again
    assert not stats()["suspended"] and not stats()["parked"]
    assert records(tmp_path / "a") == (3, 0, 0)
    assert kernel_count(tmp_path / "a") == 3


def test_activate_attaches_again_and_records_later_launches_in_their_context(standin, tmp_path):
    sid = start(tmp_path / "a")
    with profiler.scope("before"):
        before = launches(standin, 2)
    profiler.deactivate(sid)
    assert wait_suspended(SUSPEND_WAIT_S)
    subscribes = count(standin, "subscribe")
    profiler.activate(sid)
    st = stats()
    assert not st["suspended"] and not st["quiet"] and st["last_resume_ns"] > 0
    assert standin.standin_subscribed() and standin.standin_kernel_kind_enabled()
    assert standin.standin_launch_callback_enabled()
    assert count(standin, "subscribe") == subscribes + 1
    with profiler.scope("after"):
        after = launches(standin, 1)
        assert after[0] <= min(before)  # the library counts correlation ids afresh
        while after[-1] <= max(before):  # up to and past the ids of the launches before
            after.append(standin.standin_launch())
    profiler.finalize()
    assert records(tmp_path / "a") == (2 + len(after), 0, 0)
    root, _ = load_tree(tmp_path / "a")
    for scope, n in (("before", 2), ("after", len(after))):
        assert sum(int(node["metrics"]["count"]) for _, node in kernels(find(root, scope))) == n


def test_two_sessions_each_keep_their_own_launches_across_suspends(standin, tmp_path):
    a, b = start(tmp_path / "a"), start(tmp_path / "b")
    launches(standin, 1)  # both
    profiler.deactivate(a)
    launches(standin, 2)  # b's only: b is active, nothing is quiet
    assert not stats()["quiet"]
    suspensions = stats()["suspensions"]
    profiler.deactivate(b)
    assert wait_suspended(SUSPEND_WAIT_S)
    launches(standin, 5)  # nobody's
    profiler.activate(a)
    launches(standin, 1)  # a's only
    profiler.deactivate(a)
    assert wait_suspended(SUSPEND_WAIT_S)
    assert stats()["suspensions"] == suspensions + 2
    profiler.activate(b)
    launches(standin, 3)  # b's only
    profiler.finalize()
    assert records(tmp_path / "a") == (2, 0, 0)
    assert records(tmp_path / "b") == (6, 0, 0)


def test_finalize_while_suspended_then_a_new_session_attaches_again(standin, tmp_path):
    a, b = start(tmp_path / "a"), start(tmp_path / "b")
    launches(standin, 2)
    profiler.deactivate(a)
    profiler.deactivate(b)
    assert wait_suspended(SUSPEND_WAIT_S)
    inits, finalizes = count(standin, "init"), count(standin, "finalize")
    profiler.finalize(a)
    assert count(standin, "init") == inits  # a's records came at the suspend
    assert stats()["suspended"] and stats()["running"]  # b holds it still
    start(tmp_path / "c")
    assert not stats()["suspended"] and standin.standin_subscribed()
    launches(standin, 1)  # c's only
    profiler.finalize()
    assert count(standin, "finalize") == finalizes + 1  # the last release (idle time 0), once
    assert records(tmp_path / "a") == records(tmp_path / "b") == (2, 0, 0)
    assert records(tmp_path / "c") == (1, 0, 0)


def test_a_wake_cancels_the_clock(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0.5")
    fired, suspensions = _native.testing.cupti_idle_releases_fired(), stats()["suspensions"]
    sid = start(tmp_path / "a")
    profiler.deactivate(sid)
    assert stats()["quiet"]
    profiler.activate(sid)
    time.sleep(0.8)  # past the idle time
    assert _native.testing.cupti_idle_releases_fired() == fired
    assert stats()["suspensions"] == suspensions and standin.standin_subscribed()
    launches(standin, 2)
    profiler.deactivate(sid)  # quiet again: a clock of its own
    assert wait_suspended(SUSPEND_WAIT_S)
    assert _native.testing.cupti_idle_releases_fired() == fired + 1
    profiler.finalize()
    assert records(tmp_path / "a") == (2, 0, 0)


def test_a_schedule_is_let_go_between_its_windows(standin, tmp_path):
    start(tmp_path / "s", schedule=profiler.schedule(wait=2, active=1, repeat=2))
    suspensions = stats()["suspensions"]
    for step in range(6):
        if step % 3 != 2:  # a waiting step: quiet, then let go
            assert wait_suspended(SUSPEND_WAIT_S)
        launches(standin, 2)
        profiler.step()
    profiler.finalize()
    assert stats()["suspensions"] >= suspensions + 2
    meta = load_meta(tmp_path / "s")
    assert meta["kernel_records"] == 4 and meta["unattributed_records"] == 0
    assert [kernel_count(str(part).removesuffix(".hatchet")) for part in meta["parts"]] == [2, 2, 0]


def test_interpreter_exit_while_suspended_writes_the_session_and_finalizes_once(standin, tmp_path):
    script = f"""
import atexit, ctypes, time
lib = ctypes.CDLL({standin.path!r}, mode=ctypes.RTLD_GLOBAL)
lib.standin_count.argtypes = [ctypes.c_char_p]
atexit.register(lambda: print("at exit: subscribed", lib.standin_subscribed(),
                              "finalized", lib.standin_count(b"finalize"), "init", lib.standin_count(b"init")))
import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends.nvidia.backend import NvidiaBackend
NvidiaBackend._driver_major = lambda self: 13
sid = profiler.start(name={str(tmp_path / "p")!r}, backend="nvidia")
lib.standin_launch()
profiler.deactivate(sid)
deadline = time.monotonic() + 5
while not _native.nvidia.cupti_attach_stats()["suspended"] and time.monotonic() < deadline:
    time.sleep(0.01)
print("suspended", int(_native.nvidia.cupti_attach_stats()["suspended"]), "init", lib.standin_count(b"init"))
"""
    env = dict(os.environ, FLAGTREE_PROFILER_CUPTI_PATH=standin.path, FLAGTREE_PROFILER_CUPTI_IDLE_S="0")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "suspended 1 init 1" in out.stdout, out.stdout
    assert "at exit: subscribed 0 finalized 1 init 1" in out.stdout, out.stdout
    assert records(tmp_path / "p") == (1, 0, 0)


def test_a_wake_that_finds_cupti_taken_stays_suspended_and_warns(standin, tmp_path):
    sid = start(tmp_path / "a")
    launches(standin, 1)
    profiler.deactivate(sid)
    assert wait_suspended(SUSPEND_WAIT_S)
    failures = stats()["resume_failures"]
    standin.standin_hold_slot(1)  # another client attaches while we let go
    profiler.activate(sid)
    assert stats()["suspended"] and stats()["resume_failures"] == failures + 1
    launches(standin, 2)  # not seen
    standin.standin_hold_slot(0)
    profiler.deactivate(sid)
    profiler.activate(sid)  # the next wake attaches again
    assert not stats()["suspended"]
    launches(standin, 3)
    with pytest.warns(UserWarning, match="another CUPTI client"):
        profiler.finalize()
    assert records(tmp_path / "a") == (4, 0, 0)


def test_graph_launches_made_before_the_suspend_are_not_joined_after_it(standin, tmp_path):
    sid = start(tmp_path / "a")
    with profiler.scope("graph"):
        _native.testing.launch(7, True)  # a graph launch: several records under one id
    began = time.monotonic_ns()
    _native.testing.record(7, "replayed", began, began + 5, 0)
    profiler.deactivate(sid)
    assert wait_suspended(SUSPEND_WAIT_S)
    profiler.activate(sid)
    began = time.monotonic_ns()
    _native.testing.record(7, "replayed", began, began + 5, 0)  # id 7 of the re-initialized library
    profiler.finalize()
    assert records(tmp_path / "a")[:2] == (2, 1)
    root, _ = load_tree(tmp_path / "a")
    assert [int(node["metrics"]["count"]) for _, node in kernels(find(root, "graph"))] == [1]


def test_an_observer_of_the_launches_keeps_cupti_attached(standin, tmp_path, monkeypatch):
    # PC sampling, counters and instrumentation watch launches through the tracer's callbacks
    # (observers): one that comes while the tracer is quiet keeps the clock from letting it go.
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0.3")
    fired = _native.testing.cupti_idle_releases_fired()
    sid = start(tmp_path / "a")
    profiler.deactivate(sid)
    _native.instrumentation.instrumentation_watch_launches(True)
    try:
        deadline = time.monotonic() + 5
        while _native.testing.cupti_idle_releases_fired() == fired and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _native.testing.cupti_idle_releases_fired() == fired + 1  # the clock ran out
        time.sleep(0.3)  # the clock's thread counts before it asks the tracer: then it was refused
        assert not stats()["suspended"] and standin.standin_subscribed()
    finally:
        _native.instrumentation.instrumentation_watch_launches(False)
    profiler.activate(sid)
    launches(standin, 1)
    profiler.finalize()
    assert records(tmp_path / "a") == (1, 0, 0)
