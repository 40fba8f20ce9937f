"""Where a profiled serving step's time goes: bench/serving_loop.py's model in short blocks,
interleaved over rounds, per configuration (none; a session active; a session deactivated; a
session with scope() and step() as the bench runs it), for the backends named; then cProfile of
one block per backend, top functions by own time. Prints us a step (medians) and the profiles."""
import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_loop  # noqa: E402

profiler, torch = serving_loop.profiler, serving_loop.torch


def block(model, steps, sid, how):
    began = time.perf_counter()
    for _ in range(steps):
        if how == "scoped":
            with profiler.scope("request"):
                model()
            profiler.step(sid)
        else:
            model()
    return (time.perf_counter() - began) / steps * 1e6


def run(model, steps, folder, backend, how, profile=None):
    if backend == "none":
        return block(model, steps, None, how)
    sid = profiler.start(os.path.join(folder, f"{backend}-{how}"), backend=backend)
    if how == "deactivated":
        profiler.deactivate(sid)
    try:
        if profile is not None:
            profile.enable()
        return block(model, steps, sid, how)
    finally:
        if profile is not None:
            profile.disable()
        profiler.finalize(sid)
        profiler.release()


def tiny(folder, backends, launches=5000):
    """A 1-block add_kernel launched `launches` times: us a launch per backend, then cProfile."""
    x = torch.ones(16, device="cuda")
    out = torch.empty_like(x)

    def loop(n):
        began = time.perf_counter()
        for _ in range(n):
            serving_loop.add_kernel[(1,)](x, x, out, 16, BLOCK=16)
        torch.cuda.synchronize()
        return (time.perf_counter() - began) / n * 1e6

    loop(100)
    for b in ["none"] + backends:
        sid = None if b == "none" else profiler.start(os.path.join(folder, f"tiny-{b}"), backend=b)
        loop(100)
        us = statistics.median(loop(launches // 5) for _ in range(5))
        prof = cProfile.Profile()
        prof.enable()
        loop(2000)
        prof.disable()
        if sid is not None:
            profiler.finalize(sid)
            profiler.release()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(14)
        print(f"--- tiny {b}: {us:.2f} us a launch; cProfile of 2000 launches")
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:4000])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--backends", default="device_timer,nvidia")
    args = parser.parse_args()
    model = serving_loop.Model(8, 4096, 256)
    configs = [("none", "plain")] + [(b, h) for b in args.backends.split(",") for h in ("plain", "deactivated", "scoped")]
    times = {c: [] for c in configs}
    with tempfile.TemporaryDirectory() as folder:
        for c in configs:
            run(model, 20, folder, *c)
        for _ in range(args.rounds):
            for c in configs:
                times[c].append(run(model, args.steps, folder, *c))
        for c in configs:
            print(f"{c[0]:13s} {c[1]:12s} {statistics.median(times[c]):8.1f} us/step  {[round(t) for t in times[c]]}")
        # the device's share: events around one request, host waiting
        for b in ["none"] + args.backends.split(","):
            sid = None if b == "none" else profiler.start(os.path.join(folder, f"ev-{b}"), backend=b)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            device = []
            for _ in range(50):
                start.record()
                model()
                end.record()
                torch.cuda.synchronize()
                device.append(start.elapsed_time(end) * 1e3)
            if sid is not None:
                profiler.finalize(sid)
                profiler.release()
            print(f"device+host span {b:13s} {statistics.median(device):8.1f} us/request")
        for b in args.backends.split(","):
            prof = cProfile.Profile()
            run(model, args.steps, folder, b, "scoped", profile=prof)
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(18)
            print(f"--- cProfile {b} scoped, {args.steps} steps")
            print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:5000])
        tiny(folder, args.backends.split(","))
        prof = cProfile.Profile()
        prof.enable()
        block(model, args.steps, None, "plain")
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(12)
        print(f"--- cProfile none, {args.steps} steps")
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:4000])


if __name__ == "__main__":
    main()
