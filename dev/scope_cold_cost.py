"""What a scope alone costs cold: `with scope("request"): pass`, each right after --work-mb of
memory traffic (numpy, as between a model's steps), against the same scope object made once and
the two bare native calls (scope_enter, scope_exit) that any scope pays at least. The variants
take turns step by step, so that the host's noise falls on all alike; each is reported as its
median (and quartiles) over --steps, minus the bare clock reads around no call.

    PYTHONPATH=$PWD/src python dev/scope_cold_cost.py [--steps 3000] [--work-mb 32]

Run it against another build (PYTHONPATH at that checkout's src/) for a before and after; the
bare native calls are the same in both and show whether the two processes ran alike.
"""
import argparse
import statistics
import time

import numpy as np

import flagtree.profiler as profiler
from flagtree.profiler.native_core import native

clock = time.perf_counter_ns


def variants():
    scope, reused = profiler.scope, profiler.scope("request")
    enter, leave, request = native.context.scope_enter, native.context.scope_exit, native.core.intern("request")

    def nothing():
        t0 = clock()
        return clock() - t0

    def made_entered_left():
        t0 = clock()
        with scope("request"):
            pass
        return clock() - t0

    def entered_left():
        t0 = clock()
        with reused:
            pass
        return clock() - t0

    def native_calls():
        t0 = clock()
        enter(request)
        leave()
        return clock() - t0

    return {"clock": nothing, "scope made+entered+left": made_entered_left,
            "scope made once, entered+left": entered_left, "scope_enter+scope_exit": native_calls}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--work-mb", type=float, default=32.0)
    args = parser.parse_args(argv)
    data = np.ones(int(args.work_mb * (1 << 20) / 8))
    calls = variants()
    names = list(calls)
    times = {name: [] for name in names}
    for step in range(args.steps):
        for turn in range(len(names)):
            name = names[(step + turn) % len(names)]
            data.sum()
            times[name].append(calls[name]())
    floor = statistics.median(times["clock"])
    print(f"clock reads: {floor:.0f} ns (subtracted)")
    for name in names[1:]:
        quartiles = statistics.quantiles(times[name], n=4)
        print(f"{name:32s} {quartiles[1] - floor:6.0f} ns  [{quartiles[0] - floor:.0f}, {quartiles[2] - floor:.0f}]")


if __name__ == "__main__":
    main()
