"""CUPTI let go between windows at most FLAGTREE_PROFILER_CUPTI_LET_GO times a process (each
let-go leaves device memory with the CUDA driver): past it, a schedule's quiet stretches keep CUPTI
attached and quiet, and a trigger's closes keep it parked, with one warning. The real nvidia
backend and native tracer against tests/standins/cupti_activity_standin.c."""
import time
import warnings

import pytest

import flagtree.profiler as profiler
from flagtree.profiler.backends.nvidia import cupti_attach
from backends.test_cupti_attach import count, kernel_count, nvidia_on_standin, standin  # noqa: F401 (fixtures)
from support.cupti_suspend import stats, wait_suspended, wait_until
from vendor_outputs import load_meta


@pytest.fixture(autouse=True)
def untold(monkeypatch):
    monkeypatch.setitem(cupti_attach._let_go, "told", False)  # the warning is once a process


def allow(monkeypatch, more):
    """Lets the process make `more` let-go's past those it made already."""
    made = stats()["suspensions"] + cupti_attach._let_go["window_closes"]
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_LET_GO", str(made + more))


def spent_warnings(caught):
    return [w for w in caught if "FLAGTREE_PROFILER_CUPTI_LET_GO" in str(w.message)]


def test_past_its_let_gos_a_trigger_keeps_cupti_parked_between_windows(standin, tmp_path, monkeypatch):
    profiler.release()
    allow(monkeypatch, 1)
    subscribes = count(standin, "subscribe")
    subscribed_after = {}

    def steps(first, last):
        for step in range(first, last):
            for _ in range(step % 3 + 1):
                standin.standin_launch()
            time.sleep(0.002)
            profiler.step()
            if step in (3, 33, 63):  # just after each window's close
                wait_until(lambda: not standin.standin_subscribed(), timeout_s=0.3)
                subscribed_after[step] = bool(standin.standin_subscribed())

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profiler.arm("steps:2-3,32-33,62-63", name=str(tmp_path / "w"), backend="nvidia")
        steps(0, 66)
        profiler.disarm()
    # The first close let go (the one allowed); the later ones kept CUPTI parked, and the third
    # window resumed it: no subscription since the second window's.
    assert subscribed_after == {3: False, 33: True, 63: True}
    assert count(standin, "subscribe") == subscribes + 2
    assert len(spent_warnings(caught)) == 1
    assert 'backend="device_timer"' in str(spent_warnings(caught)[0].message)  # the way to neither cost
    assert [kernel_count(tmp_path / f"w.part{k}") for k in (1, 2, 3)] == [3 + 1, 3 + 1, 3 + 1]
    assert not standin.standin_subscribed() and not stats()["parked"]  # disarm() let go


def test_past_its_let_gos_a_schedule_stays_attached_and_quiet(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "600")
    monkeypatch.setattr(cupti_attach, "_last_attach_s", lambda: 0.001)  # stretches of 80 ms are let go
    profiler.release()
    allow(monkeypatch, 1)
    before = stats()["suspensions"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profiler.start(name=str(tmp_path / "a"), backend="nvidia",
                       schedule=profiler.schedule(wait=10, active=1, repeat=4))
        for step in range(4 * 11):
            if step % 11 == 10:
                standin.standin_launch()
            else:
                time.sleep(0.008)
            profiler.step()
            if step == 21:  # the second stretch began: the one let-go allowed was the first's
                assert wait_suspended(1.0) is False and stats()["quiet"]
        profiler.finalize()
    assert stats()["suspensions"] == before + 1
    assert len(spent_warnings(caught)) == 1
    meta = load_meta(tmp_path / "a")
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (4, 0, 0)


def test_no_limit_and_never(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_LET_GO", "-1")
    profiler.release()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profiler.arm("steps:1-1,3-3", name=str(tmp_path / "w"), backend="nvidia")
        for _ in range(5):
            standin.standin_launch()
            profiler.step()
        profiler.disarm()
    assert not spent_warnings(caught)
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_LET_GO", "0")
    with pytest.warns(UserWarning, match=r"as often as FLAGTREE_PROFILER_CUPTI_LET_GO allows \(0;"):
        profiler.start(name=str(tmp_path / "s"), backend="nvidia", schedule=profiler.schedule(skip_first=2 ** 62))
    time.sleep(0.2)
    assert not stats()["suspended"]  # a schedule with no window ahead would be let go at once
    profiler.finalize()


def test_a_bad_value_is_an_error(monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_LET_GO", "-2")
    with pytest.raises(ValueError, match="FLAGTREE_PROFILER_CUPTI_LET_GO must be -1"):
        profiler.start(name="never-written", backend="nvidia")
