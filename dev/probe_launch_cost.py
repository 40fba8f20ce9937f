"""Where device_timer's per-launch host cost goes, on the GPU machine: 20,000 launches of a
one-block kernel (bench/arg_kernels.py, 5 arguments) per run, interleaved variants in one process,
median per-launch microseconds over --reps:
  none                  no session
  session               a device_timer session (default mode)
  session_scopes_off    mode scopes=off
  session_no_sight      the first-sight door (CompiledKernel.run property) taken off
  allocate_alone        the native allocator called alone in a Python loop, session open
  const_allocator       no session; Triton's profile allocator a Python function returning one
                        pointer (the stamped kernel compiled in a session, launched without one)
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
N = 20_000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--args", type=int, default=5)
    a = ap.parse_args()
    import torch
    import flagtree.profiler as p
    from flagtree.profiler import _native
    from flagtree.profiler.backends import get_backend
    from arg_kernels import launcher
    from triton.runtime import _allocation

    launch = launcher(a.args, torch)
    launch(); torch.cuda.synchronize()
    out = tempfile.mkdtemp()
    buf = torch.zeros(1 << 20, dtype=torch.uint8, device="cuda")

    def loop():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(N):
            launch()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / N * 1e6

    def in_session(mode=None, no_sight=False):
        sid = p.start(os.path.join(out, "s"), backend="device_timer", mode=mode)
        if no_sight:
            get_backend("device_timer").untimed.uninstall()
        launch(); torch.cuda.synchronize()
        us = loop()
        p.finalize(sid)
        return us

    def allocate_alone():
        sid = p.start(os.path.join(out, "s"), backend="device_timer")
        alloc = _native.device_timer.device_timer_allocate
        tag = _native.device_timer.device_timer_layout()["align_tag"]
        stream = torch.cuda.current_stream().cuda_stream
        t0 = time.perf_counter()
        for _ in range(N):
            alloc(16, tag, stream)
        us = (time.perf_counter() - t0) / N * 1e6
        p.finalize(sid)
        return us

    def const_allocator():
        previous = _allocation._profile_allocator.get()
        ptr = buf.data_ptr()
        _allocation.set_profile_allocator(lambda size, align, stream: ptr)
        try:
            return loop()
        finally:
            _allocation.set_profile_allocator(previous)

    variants = {"none": loop, "session": in_session,
                "session_scopes_off": lambda: in_session("scopes=off"),
                "session_no_sight": lambda: in_session(no_sight=True),
                "allocate_alone": allocate_alone}
    in_session()  # compiles the stamped kernel
    variants["const_allocator"] = const_allocator
    results = {k: [] for k in variants}
    for _ in range(a.reps):
        for k, f in variants.items():
            results[k].append(f())
    med = {k: round(statistics.median(v), 3) for k, v in results.items()}
    print(json.dumps({"args": a.args, "per_launch_us_median": med}))


if __name__ == "__main__":
    main()
