"""GPU facts for backend="device_timer": the global timer's update step, the clock mapping
against CUPTI's records and host scopes, and where a session's start and finalize spend time.

Usage on the GPU machine: python dev/probe_device_timer.py [--out DIR]   (prints one JSON object)
"""
import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import flagtree.profiler as profiler  # noqa: E402
from flagtree.profiler import _native  # noqa: E402
from triton_kernels import add_kernel  # noqa: E402


@triton.jit
def read_timer_kernel(out, ITERS: tl.constexpr):
    offs = tl.arange(0, 32)
    for i in range(ITERS):
        t = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                      is_pure=False, pack=1)
        tl.store(out + i * 32 + offs, t + offs * 0)


def timer_step(iters=4096):
    out = torch.zeros(iters * 32, dtype=torch.int64, device="cuda")
    read_timer_kernel[(1,)](out, ITERS=iters)
    torch.cuda.synchronize()
    t = out.view(iters, 32)[:, 0].tolist()
    steps = [b - a for a, b in zip(t, t[1:]) if b != a]
    return {"reads": iters, "distinct": len(steps) + 1, "span_ns": t[-1] - t[0],
            "min_step_ns": min(steps) if steps else None,
            "median_step_ns": statistics.median(steps) if steps else None,
            "ns_per_read": (t[-1] - t[0]) / iters}


def launch(x, y, out, times):
    for _ in range(times):
        add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)


def clock_against_cupti(tmp):
    """Both routes at once on the same launches, each launch in a scope that waits for it."""
    x = torch.rand(1 << 24, device="cuda")
    y, out = torch.rand_like(x), torch.empty_like(x)
    launch(x, y, out, 2)
    torch.cuda.synchronize()
    timer = profiler.start(os.path.join(tmp, "d"), backend="device_timer", data="trace")
    cupti = profiler.start(os.path.join(tmp, "c"), backend="nvidia", data="trace")
    for i in range(10):
        with profiler.scope(f"s{i}"):
            launch(x, y, out, 1)
            torch.cuda.synchronize()
    profiler.finalize(cupti)
    profiler.finalize(timer)
    events = json.load(open(os.path.join(tmp, "d.chrome_trace")))["traceEvents"]
    scopes = {e["name"]: e for e in events if e.get("cat") == "scope"}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    ours = sorted(kernels, key=lambda e: e["ts"])
    theirs = sorted((e for e in json.load(open(os.path.join(tmp, "c.chrome_trace")))["traceEvents"]
                     if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    rows = []
    for a, b in zip(ours, theirs):
        s = scopes.get(a["args"].get("context"), {})
        rows.append({"start_minus_cupti_us": round(a["ts"] - b["ts"], 2),
                     "end_minus_cupti_us": round(a["ts"] + a["dur"] - b["ts"] - b["dur"], 2),
                     "dur_us": round(a["dur"], 2), "cupti_dur_us": round(b["dur"], 2),
                     "ours_after_scope_begin_us": round(a["ts"] - s.get("ts", float("nan")), 2),
                     "cupti_after_scope_begin_us": round(b["ts"] - s.get("ts", float("nan")), 2),
                     "scope_end_minus_cupti_end_us": round(s.get("ts", 0) + s.get("dur", 0) - b["ts"] - b["dur"], 2)})
    meta = json.load(open(os.path.join(tmp, "d.meta.json")))
    clock = {k: v for k, v in meta.items() if k.startswith("device_timer_clock")}
    medians = {k: statistics.median(r[k] for r in rows) for k in rows[0]} if rows else {}
    return {"counts": [len(ours), len(theirs)], "median": medians, "rows": rows[:2], "clock": clock}


def profile_call(fn):
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    result = fn()
    prof.disable()
    elapsed = time.perf_counter() - t0
    stream = io.StringIO()
    pstats.Stats(prof, stream=stream).sort_stats("cumulative").print_stats(10)
    lines = [ln for ln in stream.getvalue().splitlines() if ln.strip() and "{" not in ln[:5]][-10:]
    return result, elapsed, lines


def session_cost(tmp):
    x = torch.rand(1 << 10, device="cuda")
    y, out = torch.rand_like(x), torch.empty_like(x)
    launch(x, y, out, 1)
    torch.cuda.synchronize()
    starts, finals, natives = [], [], []
    detail = {}
    for rep in range(6):
        t0 = time.perf_counter()
        sid = profiler.start(os.path.join(tmp, f"s{rep}"), backend="device_timer")
        t1 = time.perf_counter()
        launch(x, y, out, 5)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        if rep == 4:
            _, elapsed, lines = profile_call(lambda: profiler.finalize(sid))
            detail["finalize_profile"] = lines
        else:
            profiler.finalize(sid)
        t3 = time.perf_counter()
        starts.append(t1 - t0)
        finals.append(t3 - t2)
    t0 = time.perf_counter()
    _native.device_timer.device_timer_start(1 << 14, 1 << 12, 256)
    natives.append(("device_timer_start", time.perf_counter() - t0))
    t0 = time.perf_counter()
    _native.device_timer.device_timer_check_clock()
    natives.append(("device_timer_check_clock", time.perf_counter() - t0))
    _, elapsed, lines = profile_call(lambda: profiler.finalize(profiler.start(os.path.join(tmp, "sp"),
                                                                              backend="device_timer")))
    detail["start_and_finalize_profile"] = lines
    return {"start_ms": [round(s * 1e3, 3) for s in starts], "finalize_ms": [round(f * 1e3, 3) for f in finals],
            "native_ms": {k: round(v * 1e3, 3) for k, v in natives}, **detail}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    result = {"device": torch.cuda.get_device_name(0), "triton": triton.__version__}
    with tempfile.TemporaryDirectory() as tmp:
        result["timer_step_alone"] = timer_step()
        result["clock"] = clock_against_cupti(tmp)
        result["timer_step_after_cupti"] = timer_step()
        result["session_cost"] = session_cost(tmp)
    text = json.dumps(result, indent=1)
    if args.out:
        with open(os.path.join(args.out, "probe_device_timer.json"), "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
