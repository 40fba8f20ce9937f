"""Where a Triton launch's host time goes with and without a device_timer session, on the GPU
machine: one process launches a 5-argument one-block kernel (bench/arg_kernels.py) for
--seconds, either with no profiler (--config none) or inside an active device_timer session
(--config active), while py-spy samples it with native frames:

    py-spy record --native --rate 2000 --format raw -o none.txt -- python3 dev/probe_launch_stacks.py --config none
    python3 dev/probe_launch_stacks.py --summarize none.txt active.txt

--summarize prints, per file, the share of samples whose stack holds each frame (inclusive), for
the frames that differ most between the two files, and the launches per second the loop reached
(written to <file>.rate by the loop)."""
import argparse
import collections
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))


def loop(config, seconds, rate_file):
    import torch
    from arg_kernels import launcher

    import flagtree.profiler as profiler

    launch = launcher(5, torch)
    for _ in range(200):
        launch()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        sid = profiler.start(os.path.join(folder, "p"), backend="device_timer") if config == "active" else None
        for _ in range(200):
            launch()
        torch.cuda.synchronize()
        count, began = timed_launches(launch, seconds)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - began
        if sid is not None:
            profiler.finalize(sid)
    if rate_file:
        with open(rate_file, "w") as out:
            out.write(f"{count / elapsed:.0f} launches/s, {elapsed / count * 1e6:.3f} us a launch\n")


def timed_launches(launch, seconds):
    """The measured loop (its frame tells the loop's samples from the start-up's)."""
    count, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        for _ in range(1000):
            launch()
        count += 1000
    return count, began


def inclusive_shares(path, under="timed_launches ("):
    """({frame: share of the samples below frame `under` holding it}, those samples) from
    py-spy's raw (collapsed) output; `under` is how the frame's text begins (default: the
    measured loop's)."""
    counts, total = collections.Counter(), 0
    with open(path) as lines:
        for line in lines:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            at = next((i for i, f in enumerate(frames) if f.startswith(under)), None)
            if not n.isdigit() or at is None:
                continue
            total += int(n)
            for frame in set(frames[at + 1:]):
                counts[frame] += int(n)
    return {frame: n / total for frame, n in counts.items()}, total


def us_per_launch(path):
    try:
        return float(open(path + ".rate").read().split(", ")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return None


def summarize(paths, top=45):
    """Each frame's inclusive share of samples, as microseconds a launch where the loop's rate is known."""
    shares = [inclusive_shares(p) for p in paths]
    scales = [us_per_launch(p) for p in paths]
    for p, (_, total), us in zip(paths, shares, scales):
        print(f"{p}: {total} samples; {us} us a launch")
    frames = set().union(*(s for s, _ in shares))
    spread = sorted(frames, key=lambda f: -max(s.get(f, 0) for s, _ in shares))

    def cell(s, us, frame):
        share = s.get(frame, 0)
        return f"{share * us:6.2f}us" if us else f"{share * 100:6.2f}%"

    print(" | ".join(os.path.basename(p) for p in paths) + " | frame")
    for frame in [f for f in spread if not f.startswith("0x")][:top]:
        print(" | ".join(cell(s, us, frame) for (s, _), us in zip(shares, scales)) + " | " + frame[:160])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", choices=("none", "active"), default="none")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rate-file")
    parser.add_argument("--summarize", nargs="+")
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize)
    else:
        loop(args.config, args.seconds, args.rate_file)


if __name__ == "__main__":
    main()
