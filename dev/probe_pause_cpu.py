"""What a library-held kernel's launch costs the host between a device_timer schedule's windows, on
the CPU: the stand-in CoreX target of the tests (a real CompiledKernel, a launcher that asks
Triton's profile allocator as a device's does; the ring on the host), launched through
``kernel.run`` as FlagGems' LibEntry does. Configurations, interleaved over rounds: no session;
a session active; a session deactivated (the route paused: compile_pause.py); a session
deactivated with the pause switched off (the route as it was before the pause: the stamped copy
and the allocator at every launch). Prints ns a launch (medians)."""
import os
import statistics
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "device_timer")]

import flagtree.profiler as profiler  # noqa: E402
from flagtree.profiler.backends import get_backend  # noqa: E402
from flagtree.profiler.backends.device_timer import compile_pause  # noqa: E402
from standins import compiled_kernels, corex_triton  # noqa: E402
import test_launch_sight as sight  # noqa: E402


def launches(kernel, n):
    began = time.perf_counter_ns()
    for _ in range(n):
        kernel.run(1, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None, 1, 2, 3, 4)
    return (time.perf_counter_ns() - began) / n


def main(rounds=7, n=20_000):
    patch = pytest.MonkeyPatch()
    with tempfile.TemporaryDirectory() as folder:
        patch.setenv("TRITON_CACHE_DIR", os.path.join(folder, "triton-cache"))
        patch.setattr(get_backend("device_timer"), "start_ring", sight._host_ring)
        corex_triton.install(patch, compiled_kernels.StandinDriver)
        patch.setattr(compiled_kernels.StandinDriver, "device", lambda scratch, grid, binary: None)
        kernel = compiled_kernels.compiled_kernel(os.path.join(folder, "cache"), sight.ASTSource(
            sight.JITFunction(sight.add_kernel), dict(compiled_kernels.SIGNATURE), {"BLOCK": 1024}))
        apply = compile_pause.CompilePause._apply
        configs = ("none", "active", "deactivated", "deactivated, no pause")
        times = {c: [] for c in configs}
        for r in range(rounds + 1):
            for c in configs:
                sid = None
                if c != "none":
                    if c.endswith("no pause"):
                        patch.setattr(compile_pause.CompilePause, "_apply", lambda self: None)
                    sid = profiler.start(os.path.join(folder, "p"), backend="device_timer")
                    launches(kernel, 10)  # its first launch in a session: the stamped copy made
                    if c.startswith("deactivated"):
                        profiler.deactivate(sid)
                ns = launches(kernel, n)
                if sid is not None:
                    profiler.finalize(sid)
                    patch.setattr(compile_pause.CompilePause, "_apply", apply)
                if r:  # round 0 warms up
                    times[c].append(ns)
        for c in configs:
            print(f"{c:22s} {statistics.median(times[c]):7.0f} ns a launch")
    patch.undo()


if __name__ == "__main__":
    main()
