"""Does device memory grow with every CUPTI suspend and attach? The nvidia backend's schedule lets
CUPTI go (flush, unsubscribe, cuptiFinalize) between windows and attaches again before the next,
so a serving loop finalizes CUPTI a few times a second. Three loops, each in its own session:

  cycle:    activate, a few launches, deactivate, with FLAGTREE_PROFILER_CUPTI_IDLE_S=0 (each
            deactivate suspends at once): one attach and one suspend a cycle, nothing else;
  schedule: bench/serving_loop.py's model under schedule(wait=--wait, active=20), step() each step;
  trigger:  the same windows as a steps trigger (arm()): a detach at each close, a park ahead of
            the next, no session between.

Prints, every --every cycles (or windows), the device's used memory (cudaMemGetInfo: the whole
device's), torch's reserved memory and the suspensions so far, then the growth per suspension.
Run with --rule unknown to keep CUPTI attached between the schedule's windows (no suspends) for the
same loop's control."""
import argparse
import json
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_blocks  # noqa: E402
import serving_loop  # noqa: E402
from flagtree.profiler.backends.nvidia import cupti_attach  # noqa: E402

profiler, native, torch = serving_loop.profiler, serving_loop._native, serving_loop.torch


def sample(label, count):
    stats = native.nvidia.cupti_attach_stats()
    row = {"at": label, "n": count, "device_used_mb": round(serving_blocks.used_mb(), 1),
           "torch_reserved_mb": round(torch.cuda.memory_reserved() / 2**20, 1),
           "suspensions": stats["suspensions"], "resume_failures": stats["resume_failures"],
           "subscriptions": stats["subscriptions"], "parks_ahead": stats["parks_ahead"]}
    print(json.dumps(row), flush=True)
    return row


def cycle_loop(model, cycles, every, folder):
    os.environ["FLAGTREE_PROFILER_CUPTI_IDLE_S"] = "0"  # read at start: each deactivate suspends at once
    sid = profiler.start(os.path.join(folder, "cycle"))
    os.environ.pop("FLAGTREE_PROFILER_CUPTI_IDLE_S")
    profiler.deactivate(sid)
    rows = [sample("cycle", 0)]
    for i in range(1, cycles + 1):
        profiler.activate(sid)
        model()
        profiler.deactivate(sid)
        if i % every == 0:
            torch.cuda.synchronize()
            rows.append(sample("cycle", i))
    profiler.finalize(sid)
    return rows


def sampled_windows(label, step, model, windows, wait, every):
    """`windows` cycles of `wait` + 20 steps (`step()` after each), sampled every `every` cycles."""
    rows = [sample(label, 0)]
    for w in range(1, windows + 1):
        for _ in range(wait + 20):
            model()
            step()
        if w % every == 0:
            torch.cuda.synchronize()
            rows.append(sample(label, w))
    return rows


def schedule_loop(model, windows, wait, every, folder):
    sid = profiler.start(os.path.join(folder, "schedule"), schedule=profiler.schedule(wait=wait, active=20))
    rows = sampled_windows("schedule", lambda: profiler.step(sid), model, windows, wait, every)
    profiler.finalize(sid)
    return rows


def trigger_loop(model, windows, wait, every, folder):
    """A steps trigger at the schedule's windows: CUPTI let go at each close (cuptiFinalize) and
    attached ahead of the next, parked, with no session between."""
    ranges = ",".join(f"{w * (wait + 20) + wait}-{w * (wait + 20) + wait + 19}" for w in range(windows))
    profiler.arm(f"steps:{ranges}", name=os.path.join(folder, "trigger"))
    rows = sampled_windows("trigger", profiler.step, model, windows, wait, every)
    profiler.disarm()
    return rows


LOOPS = {"cycle": cycle_loop, "schedule": schedule_loop, "trigger": trigger_loop}


def growth(rows):
    """MB of device memory per suspension from the second sample on (the first attach's own buffers
    come before it)."""
    first, last = rows[1], rows[-1]
    # A trigger's windows let CUPTI go by a detach, not a suspend: count its fresh subscriptions.
    key = "subscriptions" if last["at"] == "trigger" else "suspensions"
    suspends = last[key] - first[key]
    grown = last["device_used_mb"] - first["device_used_mb"]
    return {"loop": last["at"], "suspensions": suspends, "device_grown_mb": round(grown, 1),
            "kb_per_suspension": round(grown * 1024 / suspends, 1) if suspends else None}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--loops", default="cycle,schedule")
    parser.add_argument("--cycles", type=int, default=400)
    parser.add_argument("--windows", type=int, default=200)
    parser.add_argument("--wait", type=int, default=480)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--rule", choices=["known", "unknown"], default="known")
    parser.add_argument("--hidden", type=int, default=4096)
    args = parser.parse_args()
    if args.rule == "unknown":
        cupti_attach.MIN_KNOWN_QUIET_S = math.inf
    model = serving_loop.Model(8, args.hidden, 256)
    for _ in range(20):
        model()
    with tempfile.TemporaryDirectory() as folder:
        for loop in args.loops.split(","):
            began = time.perf_counter()
            rows = (cycle_loop(model, args.cycles, args.every, folder) if loop == "cycle"
                    else LOOPS[loop](model, args.windows, args.wait, max(1, args.every // 5), folder))
            print("GROWTH", json.dumps(dict(growth(rows), seconds=round(time.perf_counter() - began, 1))), flush=True)


if __name__ == "__main__":
    main()
