"""What attaching a steps trigger's windows ahead saves the program (nvidia backend), in one
process: bench/serving_loop.py's model, blocks of --cycles windows (20 steps every --wait + 20),
each block armed with a steps trigger at its windows and disarmed after, interleaved none, park,
none, attach, ... over --rounds rounds. "park": as shipped (each window attached ahead, parked,
on the idle clock's thread; the first at the pace of the block's first 32 steps); "attach":
FLAGTREE_PROFILER_CUPTI_IDLE_S=0, which turns the park off, so each window attaches on its step.
Both let CUPTI go at each close. Prints each configuration's median ratio to its neighbouring
none blocks and the parks a block.

    python3 dev/probe_trigger_park.py --rounds 5"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_blocks  # noqa: E402
import serving_loop  # noqa: E402

profiler, native = serving_loop.profiler, serving_loop._native
ACTIVE = 20


def block(config, model, wait, cycles, base):
    """Seconds a step and the parks ahead of one block."""
    steps = cycles * (wait + ACTIVE)
    if config == "none":
        return serving_blocks.plain_block(model, steps), 0
    if config == "attach":
        os.environ["FLAGTREE_PROFILER_CUPTI_IDLE_S"] = "0"
    else:
        os.environ.pop("FLAGTREE_PROFILER_CUPTI_IDLE_S", None)
    parks = native.nvidia.cupti_attach_stats()["parks_ahead"]
    ranges = ",".join(f"{c * (wait + ACTIVE) + wait}-{c * (wait + ACTIVE) + wait + ACTIVE - 1}" for c in range(cycles))
    profiler.arm(f"steps:{ranges}", name=base, backend="nvidia")
    began = time.perf_counter()
    for _ in range(steps):
        model()
        profiler.step()
    took = (time.perf_counter() - began) / steps
    profiler.disarm()
    os.environ.pop("FLAGTREE_PROFILER_CUPTI_IDLE_S", None)
    return took, native.nvidia.cupti_attach_stats()["parks_ahead"] - parks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--wait", type=int, default=480)
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=4096)
    args = parser.parse_args()
    model = serving_loop.Model(8, args.hidden, 256)
    configs = ("park", "attach")
    order = tuple(x for c in configs for x in ("none", c))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        serving_blocks.first_nvidia_session(model, folder)
        for r in range(args.rounds):
            rows += [(c,) + block(c, model, args.wait, args.cycles, os.path.join(folder, f"{c}{r}")) for c in order]
        rows.append(("none",) + block("none", model, args.wait, args.cycles, folder))
    serving_blocks.report(rows, configs, "parks")

if __name__ == "__main__":
    main()
