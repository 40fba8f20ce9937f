"""A schedule that knows its quiet stretch will be long lets CUPTI go when it begins, rather than
after FLAGTREE_PROFILER_CUPTI_IDLE_S quiet (schedule_steps._enter, Backend.quiet_ahead,
cupti_attach.suspend_if_quiet_for): the real nvidia backend and native tracer on the CPU, against
tests/standins/cupti_activity_standin.c. The idle time here is 600 s, so that only a known quiet
stretch can suspend within a test."""
import time

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native, schedule_steps
from flagtree.profiler.backends.nvidia import cupti_attach
from test_cupti_attach import count, kernel_count, nvidia_on_standin, standin  # noqa: F401 (fixtures)
from vendor_outputs import load_meta
from support.cupti_suspend import stats, wait_suspended, wait_until

SUSPEND_WAIT_S = 5.0  # a bound on a wait that ends at once when the code works
NO_SUSPEND_S = 0.3  # how long a test watches for a suspend that must not come (the clock's thread acts in ms)


@pytest.fixture(autouse=True)
def long_idle_time(monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "600")


def start(base, plan):
    return profiler.start(name=str(base), backend="nvidia", schedule=plan)


def launches(lib, n):
    for _ in range(n):
        lib.standin_launch()


def records(base):
    meta = load_meta(base)
    return meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]


def stays_attached():
    """No suspend came, and the tracer is still quiet and subscribed."""
    fired = _native.testing.cupti_idle_releases_fired()
    time.sleep(NO_SUSPEND_S)
    st = stats()
    return st["quiet"] and not st["suspended"] and _native.testing.cupti_idle_releases_fired() == fired


def test_a_schedule_with_no_window_ahead_is_let_go_at_its_start(standin, tmp_path):
    suspensions = stats()["suspensions"]
    start(tmp_path / "a", profiler.schedule(skip_first=2 ** 62))
    assert wait_suspended(SUSPEND_WAIT_S)
    assert not standin.standin_subscribed()
    for _ in range(3):
        launches(standin, 2)  # nobody's: nothing of the library runs
        profiler.step()
    profiler.finalize()
    assert stats()["suspensions"] == suspensions + 1
    assert records(tmp_path / "a") == (0, 0, 0)


def test_after_its_last_window_a_schedule_is_let_go_with_the_window_delivered(standin, tmp_path):
    start(tmp_path / "a", profiler.schedule(wait=1, active=2, repeat=1))
    assert stays_attached()  # the first wait's pace is not known yet: the idle clock decides
    profiler.step()
    launches(standin, 2)
    profiler.step()
    launches(standin, 2)
    assert not stats()["suspended"]
    profiler.step()  # the last window ends: no window comes
    assert wait_suspended(SUSPEND_WAIT_S)
    launches(standin, 5)
    profiler.step()
    profiler.finalize()
    meta = load_meta(tmp_path / "a")
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (4, 0, 0)
    assert [kernel_count(str(part).removesuffix(".hatchet")) for part in meta["parts"]] == [4, 0]


@pytest.mark.parametrize("step_s, let_go", [(0.03, True), (0.0, False)])
def test_the_pace_of_the_last_quiet_stretch_says_whether_the_next_is_worth_letting_go(
        standin, tmp_path, monkeypatch, step_s, let_go):
    # 10 quiet steps of 30 ms make a stretch of 0.3 s, worth letting go at a threshold of 0.2 s;
    # 10 steps of nothing make one of microseconds.
    monkeypatch.setattr(cupti_attach, "MIN_KNOWN_QUIET_S", 0.2)
    monkeypatch.setattr(cupti_attach, "QUIET_LEADS", 0)  # a slow attach on a loaded host moves no threshold
    start(tmp_path / "a", profiler.schedule(wait=10, active=1, repeat=2))
    for step in range(22):
        if step % 11 == 10:
            assert not stats()["suspended"]  # a window: attached, recording
            launches(standin, 1)
        else:
            time.sleep(step_s)
        profiler.step()
        if step == 10:  # the first window closed: the first wait's pace is known
            assert wait_suspended(SUSPEND_WAIT_S) if let_go else stays_attached()
    profiler.finalize()
    assert records(tmp_path / "a") == (2, 0, 0)


@pytest.mark.parametrize("attach_s, let_go", [(0.015, True), (0.04, False)])
def test_a_stretch_is_let_go_when_it_lasts_twice_the_lead_of_the_attach_ahead(
        standin, tmp_path, monkeypatch, attach_s, let_go):
    # The shipped bounds. Stretches of 10 steps of 20 ms (0.2 s): an attach of 15 ms makes a lead
    # of 45 ms, which 0.2 s lasts more than twice; one of 40 ms a lead of 0.12 s, which it does not.
    monkeypatch.setattr(cupti_attach, "_last_attach_s", lambda: attach_s)
    start(tmp_path / "a", profiler.schedule(wait=10, active=1, repeat=2))
    for step in range(22):
        if step % 11 == 10:
            launches(standin, 1)
        else:
            time.sleep(0.02)
        profiler.step()
        if step == 10:
            assert wait_suspended(SUSPEND_WAIT_S) if let_go else stays_attached()
    profiler.finalize()
    assert records(tmp_path / "a") == (2, 0, 0)


def test_windows_a_tenth_of_a_second_apart_each_hold_their_own_launches_through_every_suspend(
        standin, tmp_path, monkeypatch):
    # Stretches of 10 steps of 8 ms, past the shipped bounds with an attach of 1 ms (a lead of
    # 20 ms): CUPTI is let go and attached again at every cycle, as a serving loop's schedule does.
    monkeypatch.setattr(cupti_attach, "_last_attach_s", lambda: 0.001)
    profiler.release()
    before = stats()
    start(tmp_path / "a", profiler.schedule(wait=10, active=1, repeat=12))
    for step in range(12 * 11):
        if step % 11 == 10:
            launches(standin, 2)
        else:
            time.sleep(0.008)
        profiler.step()
    assert wait_suspended(SUSPEND_WAIT_S)  # after the last window, for good
    profiler.finalize()
    after = stats()
    suspensions = after["suspensions"] - before["suspensions"]
    assert suspensions >= 2  # on a loaded host a window's wake may come before its stretch's suspend
    assert after["subscriptions"] - before["subscriptions"] == suspensions  # the start's and one a re-attach
    meta = load_meta(tmp_path / "a")
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (24, 0, 0)
    assert [kernel_count(str(part).removesuffix(".hatchet")) for part in meta["parts"]] == [2] * 12 + [0]


def test_an_idle_time_of_zero_is_left_to_the_clock(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0")
    fired = _native.testing.cupti_idle_releases_fired()
    start(tmp_path / "a", profiler.schedule(skip_first=2 ** 62))
    assert wait_suspended(SUSPEND_WAIT_S)
    assert not cupti_attach.suspend_if_quiet_for(float("inf"))  # suspended at once already
    profiler.finalize()
    assert _native.testing.cupti_idle_releases_fired() == fired + 1


@pytest.mark.parametrize("step_s, let_go", [(0.005, True), (0.0, False)])
def test_a_first_quiet_stretch_is_reckoned_from_its_own_first_steps(standin, tmp_path, monkeypatch, step_s, let_go):
    # After PACE_STEPS steps of 5 ms, the 28 steps left before the window make 0.14 s, worth
    # letting go at a threshold of 0.05 s; steps of nothing make microseconds.
    monkeypatch.setattr(cupti_attach, "MIN_KNOWN_QUIET_S", 0.05)
    monkeypatch.setattr(cupti_attach, "QUIET_LEADS", 0)
    start(tmp_path / "a", profiler.schedule(wait=schedule_steps.PACE_STEPS + 28, active=1, repeat=1))
    for step in range(schedule_steps.PACE_STEPS):
        assert not stats()["suspended"]
        time.sleep(step_s)
        profiler.step()
    assert wait_suspended(SUSPEND_WAIT_S) if let_go else stays_attached()
    for step in range(28):
        profiler.step()
    launches(standin, 3)
    profiler.step()
    profiler.finalize()
    assert records(tmp_path / "a") == (3, 0, 0)


def test_a_step_reads_the_idle_time_its_session_started_with(standin, tmp_path, monkeypatch):
    # The environment changed after start(), to a value the profiler refuses: step() neither
    # raises nor follows it.
    start(tmp_path / "a", profiler.schedule(wait=1, active=1, repeat=1))
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "not a number")
    profiler.step()
    launches(standin, 2)
    profiler.step()  # the last window ends: let go at once
    assert wait_suspended(SUSPEND_WAIT_S)
    profiler.finalize()
    assert records(tmp_path / "a") == (2, 0, 0)


def test_a_finalize_parks_by_the_idle_time_its_session_started_with(standin, tmp_path, monkeypatch):
    start(tmp_path / "a", None)
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "not a number")
    launches(standin, 2)
    profiler.finalize()  # parks for the 600 s read at start()
    assert stats()["parked"] and standin.standin_subscribed()
    assert records(tmp_path / "a") == (2, 0, 0)


def wait_attached_ahead(before, timeout=SUSPEND_WAIT_S):
    wait_until(lambda: stats()["attaches_ahead"] != before, timeout, poll_s=0.005)
    return stats()["attaches_ahead"] == before + 1


def lead_of(monkeypatch, seconds):
    """Thresholds that a stretch of 20 steps of 10 ms passes, and a lead of `seconds`."""
    monkeypatch.setattr(cupti_attach, "MIN_KNOWN_QUIET_S", 0.05)
    monkeypatch.setattr(cupti_attach, "QUIET_LEADS", 0)
    monkeypatch.setattr(cupti_attach, "LEAD_ATTACHES", 0)
    monkeypatch.setattr(cupti_attach, "MIN_LEAD_S", seconds)


def test_a_let_go_stretch_attaches_again_ahead_of_its_window_and_the_window_only_wakes_it(
        standin, tmp_path, monkeypatch):
    lead_of(monkeypatch, 0.05)  # 5 steps of 10 ms before the window
    start(tmp_path / "a", profiler.schedule(wait=20, active=1, repeat=2))
    for _ in range(20):  # the first stretch: its pace
        time.sleep(0.01)
        profiler.step()
    launches(standin, 1)
    profiler.step()  # window 1 ends: the next stretch (20 steps) is let go
    assert wait_suspended(SUSPEND_WAIT_S)
    ahead = stats()["attaches_ahead"]
    for _ in range(10):  # half the stretch: well before its lead
        assert stats()["suspended"] and stats()["attaches_ahead"] == ahead
        time.sleep(0.01)
        profiler.step()
    for _ in range(9):
        time.sleep(0.01)
        profiler.step()
    assert wait_attached_ahead(ahead)  # the last step before the window
    st = stats()
    assert st["quiet"] and not st["suspended"] and standin.standin_subscribed()
    assert not standin.standin_kernel_kind_enabled() and not standin.standin_launch_callback_enabled()
    subscriptions = st["subscriptions"]
    launches(standin, 2)  # quiet: no callback, no record
    profiler.step()  # window 2 opens: a wake, no subscribe
    assert not stats()["quiet"] and stats()["subscriptions"] == subscriptions
    assert standin.standin_kernel_kind_enabled() and standin.standin_launch_callback_enabled()
    launches(standin, 3)
    profiler.step()
    profiler.finalize()
    assert records(tmp_path / "a") == (4, 0, 0)
    assert [kernel_count(str(p).removesuffix(".hatchet")) for p in load_meta(tmp_path / "a")["parts"]] == [1, 3, 0]


def test_an_attach_ahead_that_finds_cupti_taken_is_left_to_the_wake(standin, tmp_path, monkeypatch):
    lead_of(monkeypatch, 0.1)
    start(tmp_path / "a", profiler.schedule(wait=20, active=1, repeat=2))
    for _ in range(20):
        time.sleep(0.01)
        profiler.step()
    launches(standin, 1)
    profiler.step()
    assert wait_suspended(SUSPEND_WAIT_S)
    failures, subscriptions = stats()["resume_failures"], stats()["subscriptions"]
    inits = count(standin, "init")
    standin.standin_hold_slot(1)  # another client attaches meanwhile
    for _ in range(19):
        time.sleep(0.01)
        profiler.step()
    assert stays_suspended()
    assert count(standin, "init") == inits + 1  # the attach ahead called CUPTI, which refused it
    standin.standin_hold_slot(0)
    profiler.step()  # window 2: the wake attaches
    assert not stats()["suspended"] and stats()["subscriptions"] == subscriptions + 1
    assert stats()["resume_failures"] == failures  # nothing was lost: no warning due
    launches(standin, 2)
    profiler.step()
    profiler.finalize()
    assert records(tmp_path / "a") == (3, 0, 0)


def stays_suspended():
    time.sleep(NO_SUSPEND_S)
    return stats()["suspended"]
