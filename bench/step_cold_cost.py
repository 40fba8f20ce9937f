"""What the profiler's per-step calls cost a program where they really run: between a step's
work, with the caches that work cooled, not in a tight loop of calls. Each step does --work-mb
of memory traffic (numpy over an array larger than the last-level cache, standing in for a
model's step and its synchronize), then the calls a serving loop makes around a request:
scope("request") entered before the work and left after it, then step(). The time of the calls
alone is read between clock reads and reported as the median over steps, minus the same clock
reads around no call ("clock"), interleaved over --rounds rounds.

Configurations: "scope+step": no session, nothing armed (what the calls cost a program that is not
being profiled); "armed-steps", "armed-signal", "armed-file": arm() with a trigger that never fires
(steps far beyond the run, SIGUSR1, a file never touched); "schedule": a session under a schedule
whose one window lies beyond the run (every step a quiet one).

    python bench/step_cold_cost.py [--steps 300] [--rounds 3] [--work-mb 32] [--out FILE]

CPU only: the device plays no part in these calls (the nvidia backend's quiet stretch, which lets
CUPTI go, is measured by dev/probe_known_quiet.py).
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

import flagtree.profiler as profiler

CONFIGS = ("clock", "scope+step", "armed-steps", "armed-signal", "armed-file", "schedule")


def timed_calls(work, steps, calls):
    """ns of each step's calls, clock reads included: (the scope's entries, its exits with step()),
    one of each a step. With `calls` false, the clock reads around no call."""
    clock, entries, exits = time.perf_counter_ns, [], []
    for _ in range(steps):
        t0 = clock()
        scope = profiler.scope("request") if calls else None
        if calls:
            scope.__enter__()
        t1 = clock()
        work()
        t2 = clock()
        if calls:
            scope.__exit__()
            profiler.step()
        t3 = clock()
        entries.append(t1 - t0)
        exits.append(t3 - t2)
    return entries, exits


def timed_steps(work, steps, calls):
    """Median ns a step of the calls (scope entry, then its exit and step()), clock reads included."""
    entries, exits = timed_calls(work, steps, calls)
    return statistics.median(a + b for a, b in zip(entries, exits))


def run(config, work, steps, folder):
    if config == "clock":
        return timed_steps(work, steps, False)
    if config == "scope+step":
        return timed_steps(work, steps, True)
    if config == "schedule":
        sid = profiler.start(os.path.join(folder, "schedule"), schedule=profiler.schedule(wait=2 ** 40, active=1))
        try:
            return timed_steps(work, steps, True)
        finally:
            profiler.finalize(sid)
    trigger = {"armed-steps": f"steps:{2 ** 62}-{2 ** 62}", "armed-signal": "signal:USR1",
               "armed-file": "file:" + os.path.join(folder, "never-touched")}[config]
    profiler.arm(trigger, name=os.path.join(folder, "armed"))
    try:
        return timed_steps(work, steps, True)
    finally:
        profiler.disarm()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work-mb", type=float, default=32.0)
    parser.add_argument("--out", help="write the JSON report here")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRITON_INTERPRET", "1")  # a session needs a backend: the interpreter's on the CPU
    data = np.ones(int(args.work_mb * (1 << 20) / 8))

    def work():
        data.sum()

    medians = {c: [] for c in CONFIGS}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.rounds):
            for config in CONFIGS:
                medians[config].append(run(config, work, args.steps, folder))
    clock = statistics.median(medians["clock"])
    report = {"bench": "step_cold_cost", "host": platform.node(), "python": platform.python_version(),
              "args": vars(args), "clock_ns": clock,
              "calls_ns": {c: statistics.median(v) - clock for c, v in medians.items() if c != "clock"},
              "rounds_ns": medians}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        from flagtree.profiler.writers.atomic import write_json  # deferred: only with --out
        write_json(args.out, report)


if __name__ == "__main__":
    sys.exit(main())
