"""An armed trigger with the nvidia backend, on the CPU against the libcupti stand-in
(test_cupti_attach.py's): idle, CUPTI is not subscribed; a window subscribes, records the
launches of its steps, and releases CUPTI when it closes (not parked for the idle time), so the
program between windows pays nothing."""
import flagtree.profiler as profiler
from flagtree.profiler import _native
from backends.test_cupti_attach import count, kernel_count, nvidia_on_standin, standin  # noqa: F401 (fixtures)
from vendor_outputs import load_meta


def test_windows_subscribe_and_release_cupti_and_idle_leaves_it_alone(standin, tmp_path):
    profiler.release()
    subscribes = count(standin, "subscribe")
    armed = profiler.arm("steps:2-3,5-5", name=str(tmp_path / "w"), backend="nvidia")
    seen = []
    for step in range(7):
        for _ in range(step + 1):  # step k launches k + 1 kernels
            standin.standin_launch()
        seen.append(bool(standin.standin_subscribed()))
        profiler.step()
    profiler.disarm()
    assert seen == [False, False, True, True, False, True, False]
    assert count(standin, "subscribe") == subscribes + 2  # once per window
    assert not standin.standin_subscribed() and not _native.nvidia.cupti_attach_stats()["parked"]
    assert [kernel_count(tmp_path / f"w.part{k}") for k in (1, 2)] == [3 + 4, 6]
    meta = load_meta(tmp_path / "w")
    assert meta["part_steps"] == [[2, 3], [5]] and meta["backend"] == "nvidia"
    assert [w["steps"] for w in armed.windows] == [[2, 3], [5]]
