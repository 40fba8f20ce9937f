"""Where a program armed by a trigger loses time on bench/serving_loop.py's model: blocks of
--steps steps interleaved none, <part>, none, ... over --rounds rounds (each round's parts in a
shuffled order), each part's block compared with the mean of the none blocks on either side.
Parts: "control" (no profiler: the bench's own bias), "scope" (scope("request") around each
request, nothing armed), "step" (step() after each request, nothing armed), "armed_step" (arm()
with a steps trigger never reached, step() each request), "armed" (the same with the scope: the
serving bench's trigger_armed). Prints each part's median ratio and microseconds a step, then
the bookkeeping itself timed inside the model's loop (the clock read around the scope's entry,
and around its exit with step(): their cost between a model's calls, caches cooled by it,
against the same clock reads around nothing)."""
import argparse
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_loop  # noqa: E402
import step_cold_cost  # noqa: E402

profiler = serving_loop.profiler
PARTS = ("control", "scope", "step", "armed_step", "armed")
NEVER = f"steps:{2 ** 62}-{2 ** 62}"


def loop(model, steps, scoped, stepping):
    began = time.perf_counter()
    for _ in range(steps):
        if scoped:
            with profiler.scope("request"):
                model()
        else:
            model()
        if stepping:
            profiler.step()
    return time.perf_counter() - began


def block(part, model, steps, folder):
    if part in ("none", "control"):
        return loop(model, steps, False, False)
    if part in ("scope", "step"):
        return loop(model, steps, part == "scope", part == "step")
    profiler.arm(NEVER, name=os.path.join(folder, part))
    try:
        return loop(model, steps, part == "armed", True)
    finally:
        profiler.disarm()


def inline_ns(model, steps, armed, folder):
    """Median ns of the scope's entry and of its exit with step(), each read between clock reads
    (bench/step_cold_cost.py's loop); without `armed`, the clock reads around no call."""
    if armed:
        profiler.arm(NEVER, name=os.path.join(folder, "inline"))
    try:
        entries, exits = step_cold_cost.timed_calls(model, steps, armed)
    finally:
        if armed:
            profiler.disarm()
    return statistics.median(entries), statistics.median(exits)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    model = serving_loop.Model(args.layers, args.hidden, args.batch)
    ratios, times = {p: [] for p in PARTS}, {p: [] for p in PARTS}
    order, rng = list(PARTS), random.Random(1)
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(3):
            block("armed", model, args.steps, folder)
        before = block("none", model, args.steps, folder)
        for _ in range(args.rounds):
            rng.shuffle(order)
            for part in order:
                took = block(part, model, args.steps, folder)
                after = block("none", model, args.steps, folder)
                ratios[part].append(took / ((before + after) / 2))
                times[part].append(took / args.steps * 1e6)
                before = after
    for part in PARTS:
        r = sorted(ratios[part])
        print(f"{part:11s} ratio {statistics.median(r):.4f} [quartiles {r[len(r) // 4]:.4f}, {r[3 * len(r) // 4]:.4f}]"
              f" {statistics.median(times[part]):.1f} us a step", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for armed in (False, True, False, True):
            enter, leave = inline_ns(model, args.steps, armed, folder)
            print(f"inline {'armed' if armed else 'none '}: scope entry {enter:.0f} ns, exit with step() {leave:.0f} ns",
                  flush=True)


if __name__ == "__main__":
    main()
