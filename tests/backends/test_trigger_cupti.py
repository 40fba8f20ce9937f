"""An armed trigger with the nvidia backend, on the CPU against the libcupti stand-in
(test_cupti_attach.py's): idle, CUPTI is not subscribed; a window subscribes, records the
launches of its steps, and releases CUPTI when it closes (not parked for the idle time), so the
program between windows pays nothing. A steps window known to be near is attached ahead, parked,
on the idle clock's thread (cupti_attach.park_ahead): its start then only resumes CUPTI, and what
the idle steps launched meanwhile is no window's."""
import time

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from backends.test_cupti_attach import count, kernel_count, nvidia_on_standin, standin  # noqa: F401 (fixtures)
from support.cupti_suspend import stats, wait_until
from vendor_outputs import load_meta

STEP_S = 0.002  # each step sleeps this long: the pace the trigger measures between windows


def run_steps(standin, steps, sleep_s=0.0, at_step=None):
    """Steps 0..steps-1, step k launching k + 1 kernels; `at_step(k)` before each step's launches.
    Returns whether CUPTI was subscribed at the end of each step."""
    seen = []
    for step in range(steps):
        if at_step is not None:
            at_step(step)
        for _ in range(step + 1):
            standin.standin_launch()
        seen.append(bool(standin.standin_subscribed()))
        time.sleep(sleep_s)
        profiler.step()
    return seen


def wait_for_park(before, timeout_s=10.0):
    return wait_until(lambda: stats()["parks_ahead"] > before, timeout_s)


def test_windows_subscribe_and_release_cupti_and_idle_leaves_it_alone(standin, tmp_path, monkeypatch):
    # An idle time of 0 asks CUPTI to be let go whenever no session runs: nothing attaches ahead.
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0")
    profiler.release()
    subscribes, parks = count(standin, "subscribe"), stats()["parks_ahead"]
    armed = profiler.arm("steps:2-3,5-5", name=str(tmp_path / "w"), backend="nvidia")
    seen = run_steps(standin, 7)
    profiler.disarm()
    assert seen == [False, False, True, True, False, True, False]
    assert count(standin, "subscribe") == subscribes + 2  # once per window
    assert stats()["parks_ahead"] == parks
    assert not standin.standin_subscribed() and not stats()["parked"]
    assert [kernel_count(tmp_path / f"w.part{k}") for k in (1, 2)] == [3 + 4, 6]
    meta = load_meta(tmp_path / "w")
    assert meta["part_steps"] == [[2, 3], [5]] and meta["backend"] == "nvidia"
    assert [w["steps"] for w in armed.windows] == [[2, 3], [5]]


def test_a_far_window_is_attached_ahead_off_the_caller_and_counts_only_its_steps(standin, tmp_path):
    profiler.release()
    subscribes, parks, discarded = count(standin, "subscribe"), stats()["parks_ahead"], stats()["idle_discarded"]
    resumed, fired = {}, _native.testing.cupti_idle_releases_fired()

    def at_step(step):
        if step == 4:  # the close let CUPTI go on the idle clock's thread, not on the step
            resumed["let go"] = wait_until(lambda: not standin.standin_subscribed())
            resumed["by the clock"] = _native.testing.cupti_idle_releases_fired() > fired
        if step == 38:  # well after the park's step (40 less the lead at the pace of a step)
            resumed["parked"] = wait_for_park(parks) and stats()["parked"]

    armed = profiler.arm("steps:2-3,40-40", name=str(tmp_path / "w"), backend="nvidia")
    seen = run_steps(standin, 42, STEP_S, at_step)
    profiler.disarm()
    # Let go after the first window's close, the idle steps after it unsubscribed; parked before
    # the second window, which resumed it: one fresh subscription on the caller, one ahead.
    assert seen[:4] == [False, False, True, True] and not any(seen[4:10]) and seen[40]
    assert resumed == {"let go": True, "by the clock": True, "parked": True}
    assert stats()["parks_ahead"] == parks + 1
    assert count(standin, "subscribe") == subscribes + 2
    # The launches of the steps while parked (recorded by CUPTI, not seen) are in no window.
    assert stats()["idle_discarded"] > discarded
    assert [kernel_count(tmp_path / f"w.part{k}") for k in (1, 2)] == [3 + 4, 41]
    assert [w["steps"] for w in armed.windows] == [[2, 3], [40]]
    assert not standin.standin_subscribed() and not stats()["parked"]


def test_a_near_window_finds_cupti_still_parked(standin, tmp_path):
    profiler.release()
    subscribes, parks = count(standin, "subscribe"), stats()["parks_ahead"]
    # Three windows: the first measures nothing (no pace yet); after each later close the next
    # window is a few fast steps away, well within the lead: CUPTI stays parked until it opens.
    profiler.arm("steps:2-2,4-4,6-6", name=str(tmp_path / "w"), backend="nvidia")
    seen = run_steps(standin, 8)
    profiler.disarm()
    assert seen[2:7] == [True, True, True, True, True]
    assert count(standin, "subscribe") == subscribes + 1 and stats()["parks_ahead"] == parks
    assert [kernel_count(tmp_path / f"w.part{k}") for k in (1, 2, 3)] == [3, 5, 7]
    assert not standin.standin_subscribed() and not stats()["parked"]


def test_the_first_window_is_attached_ahead_when_arm_names_the_backend(standin, tmp_path):
    profiler.start(name=str(tmp_path / "earlier"), backend="nvidia")  # the library this process uses
    profiler.finalize()
    profiler.release()
    subscribes, parks = count(standin, "subscribe"), stats()["parks_ahead"]
    parked = {}

    def at_step(step):
        if step == 58:  # the pace of the first 32 steps puts the park some steps before step 60
            parked["before the window"] = wait_for_park(parks)

    profiler.arm("steps:60-60", name=str(tmp_path / "w"), backend="nvidia")
    seen = run_steps(standin, 61, STEP_S, at_step)
    profiler.disarm()
    assert not any(seen[:33]) and seen[60] and parked["before the window"]
    assert stats()["parks_ahead"] == parks + 1 and count(standin, "subscribe") == subscribes + 1
    assert kernel_count(tmp_path / "w.part1") == 61


@pytest.mark.parametrize("ends", ["disarm", "idle clock"])
def test_a_window_that_does_not_come_lets_cupti_go(standin, tmp_path, monkeypatch, ends):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0.2" if ends == "idle clock" else "10")
    profiler.release()
    parks = stats()["parks_ahead"]
    profiler.arm("steps:2-3,40-40", name=str(tmp_path / "w"), backend="nvidia")
    run_steps(standin, 38, STEP_S)  # the last window's step never comes
    assert wait_for_park(parks)
    if ends == "idle clock":
        deadline = time.monotonic() + 10
        while standin.standin_subscribed() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not standin.standin_subscribed()
    profiler.disarm()
    assert not standin.standin_subscribed() and not stats()["parked"]
    assert kernel_count(tmp_path / "w.part1") == 3 + 4


@pytest.mark.parametrize("seed", range(6))
def test_windows_stay_exact_whatever_the_park_ahead_races(standin, tmp_path, seed):
    """Random ranges and step paces: the idle clock's park may land before a window, while it
    opens, or not at all; each window counts exactly its steps' launches, and CUPTI is let go at
    the end."""
    import random
    rng = random.Random(seed)
    profiler.release()
    starts = sorted(rng.sample(range(1, 120), 5))
    ranges = [(a, a + rng.randrange(2)) for a in starts]
    ranges = [r for i, r in enumerate(ranges) if i == 0 or r[0] > ranges[i - 1][1] + 1]
    armed = profiler.arm("steps:" + ",".join(f"{a}-{b}" for a, b in ranges), name=str(tmp_path / "w"),
                         backend="nvidia")
    for step in range(ranges[-1][1] + 2):
        for _ in range(step % 4 + 1):
            standin.standin_launch()
        time.sleep(rng.choice([0, 0.001, 0.002, 0.004]))
        profiler.step()
    profiler.disarm()
    expected = [sum(s % 4 + 1 for s in range(a, b + 1)) for a, b in ranges]
    assert [kernel_count(tmp_path / f"w.part{k + 1}") for k in range(len(ranges))] == expected
    assert [w["steps"] for w in armed.windows] == [list(range(a, b + 1)) for a, b in ranges]
    assert not standin.standin_subscribed() and not stats()["parked"]
