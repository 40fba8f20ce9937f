"""A schedule's let-go stretch attached again ahead of its window, on the idle clock's thread
while the program launches (DialectTracer::attachAhead in csrc/backends/dialect/dialect_tracer_quiet.h),
on a real GPU: each window only wakes CUPTI (no subscription of its own) and holds exactly its own
launches; those made between the attach and the window are nobody's."""
import time

import pytest
import torch

import flagtree.profiler as profiler
from flagtree.profiler.backends.nvidia import cupti_attach
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree
from support.cupti_suspend import stats


@pytest.fixture(autouse=True)
def short_thresholds(monkeypatch):
    # A stretch of 30 steps of about 10 ms is let go; the attach comes 3 attaches (about 45 ms)
    # or 50 ms before its window, whichever is longer. The idle clock (600 s) never fires.
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "600")
    monkeypatch.setattr(cupti_attach, "MIN_KNOWN_QUIET_S", 0.2)
    monkeypatch.setattr(cupti_attach, "MIN_LEAD_S", 0.05)
    yield
    profiler.finalize()


def adds(root):
    return sum(count for path, count in kernel_counts(root).items() if "add_kernel" in path[-1])


def test_windows_after_an_attach_ahead_hold_their_own_launches(tmp_path):
    x, y, out = tensors(1024)
    profiler.release()  # the start subscribes afresh, whatever the tests before left parked
    before = stats()
    profiler.start(name=str(tmp_path / "w"), backend="nvidia", schedule=profiler.schedule(wait=30, active=2, repeat=3))
    for _ in range(96):
        for _ in range(4):
            launch_add(x, y, out)
        torch.cuda.synchronize()
        time.sleep(0.01)
        profiler.step()
    profiler.finalize()
    after = stats()
    ahead = after["attaches_ahead"] - before["attaches_ahead"]
    assert ahead == 2  # before windows 2 and 3; after the last one CUPTI is let go for good
    assert after["subscriptions"] - before["subscriptions"] == 1 + ahead  # the start's, and each attach ahead's
    meta = load_json(tmp_path / "w.meta.json")
    assert [adds(load_tree(part)[0]) for part in meta["parts"]][:3] == [8, 8, 8]
    assert meta["unattributed_records"] == 0 and meta["lost_launches"] == 0
