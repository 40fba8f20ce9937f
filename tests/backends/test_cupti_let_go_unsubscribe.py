"""CUPTI let go between windows by unsubscribing only (native cupti_let_go_finalizes(False)):
a suspend or the idle clock's detach flushes, turns the kinds off and unsubscribes, and never
calls cuptiFinalize; release() still finalizes. The real nvidia backend and native tracer against
tests/standins/cupti_activity_standin.c, whose cuptiFinalize alone starts correlation ids over."""
import warnings

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from backends.test_cupti_attach import count, kernel_count, nvidia_on_standin, standin  # noqa: F401 (fixtures)
from support.cupti_suspend import stats, wait_suspended, wait_until
from vendor_outputs import find, kernels, load_meta, load_tree

SUSPEND_WAIT_S = 5.0  # a bound on a wait that ends at once when the code works


@pytest.fixture(autouse=True)
def unsubscribe_only(monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0")
    _native.nvidia.cupti_let_go_finalizes(False)
    yield
    _native.nvidia.cupti_let_go_finalizes(True)


def test_a_suspend_unsubscribes_without_finalizing_and_the_wake_records_again(standin, tmp_path):
    sid = profiler.start(name=str(tmp_path / "a"), backend="nvidia")
    with profiler.scope("before"):
        before = [standin.standin_launch() for _ in range(3)]  # their records wait in the buffer
    finalizes, unsubscribes = count(standin, "finalize"), count(standin, "unsubscribe")
    profiler.deactivate(sid)
    assert wait_suspended(SUSPEND_WAIT_S)
    assert count(standin, "finalize") == finalizes
    assert count(standin, "unsubscribe") == unsubscribes + 1
    assert not standin.standin_subscribed() and not standin.standin_kernel_kind_enabled()
    for _ in range(4):
        standin.standin_launch()  # nobody's: no subscriber, no kind on
    profiler.activate(sid)
    assert standin.standin_subscribed() and standin.standin_kernel_kind_enabled()
    with profiler.scope("after"):
        after = [standin.standin_launch() for _ in range(2)]
    assert min(after) > max(before)  # not finalized: the library's ids go on
    profiler.finalize()
    meta = load_meta(tmp_path / "a")
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (5, 0, 0)
    root, _ = load_tree(tmp_path / "a")
    for scope, n in (("before", 3), ("after", 2)):
        assert sum(int(node["metrics"]["count"]) for _, node in kernels(find(root, scope))) == n
    assert count(standin, "finalize") == finalizes + 1  # the last release (idle time 0) finalizes


def test_let_gos_that_only_unsubscribe_are_not_counted_against_the_limit(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_LET_GO", "1")
    profiler.start(name=str(tmp_path / "s"), backend="nvidia", schedule=profiler.schedule(wait=2, active=1, repeat=3))
    suspensions, finalizes = stats()["suspensions"], count(standin, "finalize")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(9):
            if step % 3 != 2:  # a waiting step: quiet, then let go, every time
                assert wait_suspended(SUSPEND_WAIT_S)
            standin.standin_launch()
            profiler.step()
        profiler.finalize()
    assert stats()["suspensions"] >= suspensions + 3
    assert count(standin, "finalize") == finalizes  # the session ended suspended: nothing to stop
    assert profiler.release() and count(standin, "finalize") == finalizes + 1
    assert not [w for w in caught if "FLAGTREE_PROFILER_CUPTI_LET_GO" in str(w.message)]
    meta = load_meta(tmp_path / "s")
    assert [kernel_count(str(part).removesuffix(".hatchet")) for part in meta["parts"]] == [1, 1, 1, 0]


def test_the_idle_clock_detaches_a_parked_tracer_by_unsubscribing(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0.05")
    profiler.start(name=str(tmp_path / "p"), backend="nvidia")
    standin.standin_launch()
    finalizes = count(standin, "finalize")
    profiler.finalize()  # parked, then the clock lets go
    assert wait_until(lambda: not stats()["parked"], timeout_s=SUSPEND_WAIT_S)
    assert not standin.standin_subscribed() and count(standin, "finalize") == finalizes
    assert kernel_count(tmp_path / "p") == 1
    assert profiler.release()  # an explicit release hands the library over whole
    assert count(standin, "finalize") == finalizes + 1 and stats()["finalizes"] >= 1
    assert not profiler.release()  # once


def test_a_release_leaves_the_library_to_a_tool_that_subscribed_after_the_let_go(standin, tmp_path):
    profiler.start(name=str(tmp_path / "p"), backend="nvidia")
    standin.standin_launch()
    profiler.finalize()  # idle time 0: let go by unsubscribing
    finalizes = count(standin, "finalize")
    standin.standin_hold_slot(1)  # another tool subscribed
    assert not profiler.release() and count(standin, "finalize") == finalizes
    standin.standin_hold_slot(0)
    assert not profiler.release()  # asked once: the library is that tool's now
