"""Many device_timer sessions in a row (start, launches of bench/arg_kernels.py's 1-argument kernel,
finalize), for a native profiler to sample where finalize's time goes:

    py-spy record --native --rate 1000 --format raw -o stacks.txt -- python3 dev/probe_finalize_stacks.py
    python3 dev/probe_finalize_stacks.py --summarize stacks.txt [--under "removeSession ("]
"""
import argparse
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
    """The heaviest frames below `under` (how its text begins), as shares of its samples."""
    from probe_launch_stacks import inclusive_shares  # deferred: only --summarize reads stacks

    shares, total = inclusive_shares(path, under)
    print(f"{total} samples under {under!r}")
    for frame, share in sorted(shares.items(), key=lambda item: -item[1])[:top]:
        print(f"{share * 100:6.2f}%  {frame[:160]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--summarize")
    parser.add_argument("--under", default="_finalize_locked (")
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize, args.under)
    else:
        sessions(args.sessions, args.launches)
