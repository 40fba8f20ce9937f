"""CUPTI suspended while the sessions holding it are deactivated (DialectTracer::suspend in
csrc/backends/dialect/dialect_tracer_quiet.h) on a real GPU, with FLAGTREE_PROFILER_CUPTI_IDLE_S=0:
kernels still running at the switch off are recorded, CUPTI is finalized and subscribed afresh at
activate, launches after it are recorded in their scope, and a schedule's windows each hold
exactly their own launches across the suspends between them."""

import pytest
import torch

import flagtree.profiler as profiler
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree
from support.cupti_suspend import stats, wait_suspended


@pytest.fixture(autouse=True)
def suspend_at_once(monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0")
    yield
    profiler.finalize()


SUSPEND_WAIT_S = 10.0  # a bound on a wait that ends at once when the code works


def adds(root, scope=None):
    return sum(count for path, count in kernel_counts(root).items()
               if "add_kernel" in path[-1] and (scope is None or scope in path))


def test_a_suspended_session_records_before_and_after(tmp_path):
    x, y, out = tensors(1024)
    sid = profiler.start(name=str(tmp_path / "s"), backend="nvidia")
    torch.cuda._sleep(200_000_000)  # still running when the session is deactivated
    with profiler.scope("before"):
        for _ in range(10):
            launch_add(x, y, out)  # queued behind it
    subscriptions = stats()["subscriptions"]
    profiler.deactivate(sid)
    assert wait_suspended(SUSPEND_WAIT_S)
    for _ in range(7):
        launch_add(x, y, out)  # nobody's
    torch.cuda.synchronize()
    profiler.activate(sid)
    assert not stats()["suspended"] and stats()["subscriptions"] == subscriptions + 1
    with profiler.scope("after"):
        for _ in range(3):
            launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "s.hatchet")
    assert (adds(root, "before"), adds(root, "after"), adds(root)) == (10, 3, 13)
    meta = load_json(tmp_path / "s.meta.json")
    assert (meta["unattributed_records"], meta["lost_launches"], meta["dropped_records"]) == (0, 0, 0)


def test_windows_of_a_schedule_hold_their_own_launches_across_suspends(tmp_path):
    x, y, out = tensors(1024)
    suspensions = stats()["suspensions"]
    profiler.start(name=str(tmp_path / "w"), backend="nvidia", schedule=profiler.schedule(wait=3, active=2, repeat=3))
    for step in range(15):
        if step % 5 < 3:  # waiting: quiet, then let go
            assert wait_suspended(SUSPEND_WAIT_S)
        for _ in range(4):
            launch_add(x, y, out)
        torch.cuda.synchronize()
        profiler.step()
    profiler.finalize()
    assert stats()["suspensions"] >= suspensions + 3
    meta = load_json(tmp_path / "w.meta.json")
    assert [adds(load_tree(part)[0]) for part in meta["parts"]][:3] == [8, 8, 8]
    assert meta["unattributed_records"] == 0 and meta["lost_launches"] == 0
