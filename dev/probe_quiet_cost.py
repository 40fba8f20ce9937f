"""What a deactivated nvidia session costs the serving loop's steps, and whether CUPTI is quiet
then: bench/serving_loop.py's model, blocks of --steps steps interleaved over --rounds rounds:
none (no session, CUPTI released), active (a session), deactivated (a session, deactivate()),
armed (a session whose schedule never opens a window, step() each step), and each block's
cupti_attach_stats() in the middle. With FLAGTREE_PROFILER_CUPTI_IDLE_S=0 the deactivated and armed
sessions' CUPTI is suspended (finalized) at once rather than after 10 s quiet. Prints the median microseconds a step per configuration."""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_loop  # noqa: E402

profiler, native = serving_loop.profiler, serving_loop._native


def block(model, steps, sid=None, stepping=False):
    began, stats = time.perf_counter(), None
    for i in range(steps):
        model()
        if stepping:
            profiler.step(sid)
        if i == steps // 2:
            stats = dict(native.nvidia.cupti_attach_stats())
    return (time.perf_counter() - began) / steps * 1e6, stats


def run(config, model, steps, folder):
    if config == "none":
        return block(model, steps)
    schedule = profiler.schedule(wait=480, warmup=0, active=20, skip_first=2 ** 62) if config == "armed" else None
    sid = profiler.start(os.path.join(folder, config), schedule=schedule)
    if config == "deactivated":
        profiler.deactivate(sid)
    try:
        return block(model, steps, sid, stepping=config == "armed")
    finally:
        profiler.finalize(sid)
        profiler.release()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    model = serving_loop.Model(8, 4096, 256)
    configs = ("none", "active", "deactivated", "armed")
    times = {c: [] for c in configs}
    stats = {}
    with tempfile.TemporaryDirectory() as folder:
        for c in configs:
            run(c, model, 20, folder)  # warm-up
        for _ in range(args.rounds):
            for c in configs:
                us, stats[c] = run(c, model, args.steps, folder)
                times[c].append(us)
    for c in configs:
        keep = {k: v for k, v in (stats[c] or {}).items() if k in ("quiet", "parked", "quiet_switches", "attached",
                                                                  "suspended", "suspensions")}
        print(f"{c:12s} {statistics.median(times[c]):8.1f} us/step  {json.dumps(keep)}")


if __name__ == "__main__":
    main()
