"""What one window costs the caller's thread: bench/serving_loop.py's model, step by step, under a
schedule (one session, windows opened and closed by step()) and under a steps trigger (arm(), a
session per window), per backend. Each step is timed whole (request and step()); per window:
the step whose step() opens it, the steps in it, the one whose step() closes it and the steps
after, against the median step outside windows. With --cprofile, the window-closing and -opening
step() calls of the trigger under cProfile (top functions by cumulative time).

    python3 dev/probe_window_cost.py --backends device_timer,nvidia --cycles 12"""
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

profiler = serving_loop.profiler


def timed_steps(model, steps, sid, profile_at=()):
    """Step times in us (request + step()); step() calls at the indices `profile_at` run under
    cProfile, whose stats are returned beside the times."""
    times, prof = [], cProfile.Profile() if profile_at else None
    for i in range(steps):
        began = time.perf_counter_ns()
        with profiler.scope("request"):
            model()
        if i in profile_at:
            prof.enable()
            profiler.step(sid)
            prof.disable()
        else:
            profiler.step(sid)
        times.append((time.perf_counter_ns() - began) / 1e3)
    return times, prof


def summary(times, wait, active, cycles):
    """Per position in the cycle: the opening step (index wait-1, whose step() opens the window),
    the window's first step, its middle, the closing step (wait+active-1), the two after."""
    cycle = wait + active
    at = {"opening": wait - 1, "first": wait, "middle": wait + active // 2, "closing": cycle - 1,
          "after_close": cycle, "after_close+1": cycle + 1}
    quiet = [times[k * cycle + j] for k in range(cycles) for j in range(2, wait - 2)]
    base = statistics.median(quiet)
    out = {"quiet_step_us": round(base, 1)}
    for label, j in at.items():
        values = [times[k * cycle + j] for k in range(cycles) if k * cycle + j < len(times)]
        out[label + "_extra_us"] = round(statistics.median(values) - base, 1)
    window = [times[k * cycle + j] - base for k in range(cycles) for j in range(wait - 1, min(cycle + 2, len(times)))
              if k * cycle + j < len(times)]
    out["extra_per_window_us"] = round(sum(window) / cycles, 1)
    return out


def run(model, backend, how, wait, active, cycles, folder, cprofile):
    steps = (wait + active) * cycles
    name = os.path.join(folder, f"{backend}-{how}")
    options = {} if backend == "default" else {"backend": backend}
    profile_at = ()
    if cprofile and how == "trigger":
        profile_at = {k * (wait + active) + j for k in range(1, cycles) for j in (wait - 1, wait + active - 1)}
    if how == "schedule":
        sid = profiler.start(name, schedule=profiler.schedule(wait=wait, warmup=0, active=active), **options)
        times, prof = timed_steps(model, steps, sid)
        profiler.finalize(sid)
    else:
        ranges = ",".join(f"{k * (wait + active) + wait}-{(k + 1) * (wait + active) - 1}" for k in range(cycles))
        profiler.arm("steps:" + ranges, name=name, **options)
        times, prof = timed_steps(model, steps, None, profile_at)
        profiler.disarm()
    profiler.release()
    return times, prof


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", default="device_timer,nvidia")
    parser.add_argument("--wait", type=int, default=80)
    parser.add_argument("--active", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--cprofile", action="store_true")
    args = parser.parse_args()
    model = serving_loop.Model(args.layers, 4096 if serving_loop.CUDA else 256, 256 if serving_loop.CUDA else 8)
    for _ in range(20):
        model()
    with tempfile.TemporaryDirectory() as folder:
        for backend in args.backends.split(","):
            for rnd in range(args.rounds):
                for how in ("schedule", "trigger"):
                    times, prof = run(model, backend, how, args.wait, args.active, args.cycles, folder,
                                      args.cprofile and rnd == args.rounds - 1)
                    print(backend, how, f"round {rnd}", summary(times, args.wait, args.active, args.cycles), flush=True)
                    if prof is not None:
                        text = io.StringIO()
                        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(30)
                        print(text.getvalue()[:6000])


if __name__ == "__main__":
    main()
