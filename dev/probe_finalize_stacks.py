"""Many device_timer sessions in a row (start, launches of bench/arg_kernels.py's 1-argument kernel,
finalize), for a native profiler to sample where finalize's time goes:

    py-spy record --native --rate 1000 --format raw -o stacks.txt -- python3 dev/probe_finalize_stacks.py
    python3 dev/probe_finalize_stacks.py --summarize stacks.txt [--under session_remove]
"""
import argparse
import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))


def sessions(count, launches):
    import torch

    import flagtree.profiler as profiler
    from arg_kernels import launcher

    launch = launcher(1, torch)
    folder = tempfile.mkdtemp(prefix="finalize_stacks_")
    spent = []
    for i in range(count):
        profiler.start(os.path.join(folder, f"s{i % 4}"), backend="device_timer")
        for _ in range(launches):
            launch()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        profiler.finalize()
        spent.append(time.perf_counter() - t0)
    spent.sort()
    print(f"{count} sessions of {launches} launches: finalize median {1e3 * spent[len(spent) // 2]:.2f} ms")


def summarize(path, under, top=30):
    """The heaviest frames (inclusive samples) among the stacks that pass through `under`."""
    inclusive, total = collections.Counter(), 0
    for line in open(path):
        stack, _, count = line.rstrip().rpartition(" ")
        frames = stack.split(";")
        if not any(under in f for f in frames):
            continue
        total += int(count)
        at = next(i for i, f in enumerate(frames) if under in f)
        for f in set(frames[at:]):
            inclusive[f] += int(count)
    print(f"{total} samples under {under!r}")
    for frame, n in inclusive.most_common(top):
        print(f"{n:6d}  {frame[:160]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--summarize")
    parser.add_argument("--under", default="finalize")
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize, args.under)
    else:
        sessions(args.sessions, args.launches)
