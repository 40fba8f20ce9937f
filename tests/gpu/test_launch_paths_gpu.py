"""backend="device_timer" on third-party code that launches Triton kernels its own way
(bench/third_party_workloads.py): Liger-Kernel (JITFunction.run), FlagGems (its LibEntry cache of
compiled kernels), torch.compile default mode (inductor's launchers, static CUDA launcher) and
reduce-overhead (CUDA graphs). Per Triton kernel name, the launches the device timer times plus
those it counts untimed equal the nvidia backend's (CUPTI's) launches: none is lost; and every one
is timed (none counted untimed). Kernels are compiled before the sessions (a warm-up), except
under reduce-overhead, whose CUDA graph is captured in the session (a graph captured before a
session replays kernels no launch path sees unless the route is armed: docs/reference/device-timer.md);
its kernels are compiled and autotuned before both sessions by a throwaway instance, so that the
autotuner's trials, run by the first compile only, are in neither session.

Skips a workload whose package is not installed (the wheels travel in .whl/, shared/DEVICE.md)."""
import json
import os
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import flagtree.profiler as profiler  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))
from launch_paths import kernels_by_name  # noqa: E402
from third_party_workloads import BUILDERS, triton_kernel_names  # noqa: E402

STEPS = 4
NEEDS = {"liger": "liger_kernel", "flaggems": "flag_gems"}
CAPTURED_IN_SESSION = {"compile_ro"}


def _installed(name):
    try:
        __import__(NEEDS[name])
        return True
    except ImportError:
        return False


def _profiled_steps(name, backend, base):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    step = BUILDERS[name]()
    if name not in CAPTURED_IN_SESSION:
        for _ in range(3):  # compiles every kernel before the session
            step()
    sid = profiler.start(base, backend=backend)
    for _ in range(STEPS + (3 if name in CAPTURED_IN_SESSION else 0)):
        step()
    profiler.finalize(sid)
    with open(base + ".meta.json") as f:
        return kernels_by_name(base), json.load(f), triton_kernel_names()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each workload once per backend (device_timer first: the nvidia backend attaches CUPTI)."""
    done = {}

    def run(name):
        if name not in done:
            folder = tmp_path_factory.mktemp(name)
            if name in CAPTURED_IN_SESSION and (name not in NEEDS or _installed(name)):
                # a throwaway instance compiles (and autotunes) before both sessions, so that neither
                # session's compile, which hits inductor's caches, launches the autotuner's trials
                throwaway = BUILDERS[name]()
                for _ in range(3):
                    throwaway()
            with warnings.catch_warnings(record=True):  # a count untimed warns: the tests check the counts
                timer = _profiled_steps(name, "device_timer", str(folder / "timer"))
            done[name] = (timer, _profiled_steps(name, "nvidia", str(folder / "cupti")))
        return done[name]

    return run


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_triton_launch_is_timed_or_counted(name, runs):
    (timed, meta, names), (cupti, _, cupti_names) = runs(name)
    counted = {k: v["launches"] for k, v in meta.get("device_timer_not_timed_kernels", {}).items()}
    triton = (names | cupti_names) & (set(cupti) | set(timed) | set(counted))
    assert triton, f"no Triton kernel ran in {name}"
    seen = {k: timed.get(k, [0])[0] + counted.get(k, 0) for k in triton}
    launched = {k: cupti.get(k, [0])[0] for k in triton}
    assert seen == launched


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_triton_launch_gets_device_time(name, runs):
    (timed, meta, _), _ = runs(name)
    assert meta["device_timer_launches_not_timed"] == 0, meta["device_timer_not_timed_kernels"]
    assert timed
