"""PC-sampling overhead (issue #7), interleaved none / sampled in one process, median ratios:
  launch-bound: N tiny Triton launches, wall time end to end (start .. finalize included);
  GPU-bound: one long kernel, device time (CUDA events) with sampling on vs off.
Usage: python3 bench/pcsampling_bench.py [--launches 2000] [--repeats 3] [--modes m1 m2 ...]
Prints one JSON line per mode and a table; targets: launch-bound <= 20x, GPU-bound < 1.1x."""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl

import flagtree.profiler as profiler


@triton.jit
def tiny_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)


@triton.jit
def heavy_kernel(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    for _ in range(n_iter):
        acc = tl.sqrt(acc * acc + 1.0) * 0.999 + tl.sin(acc)
    tl.store(out_ptr + offs, acc)


def launch_bound(mode, launches, out_dir):
    small = torch.zeros(128, device="cuda")
    torch.cuda.synchronize()
    t = time.perf_counter()
    if mode:
        profiler.start(os.path.join(out_dir, "lb"), backend="cupti", mode=mode)
    for _ in range(launches):
        tiny_kernel[(1,)](small, BLOCK=128)
    torch.cuda.synchronize()
    if mode:
        profiler.finalize()
    return time.perf_counter() - t


def gpu_bound(mode, out_dir):
    x = torch.rand(1 << 24, device="cuda")
    out = torch.empty_like(x)
    if mode:
        profiler.start(os.path.join(out_dir, "gb"), backend="cupti", mode=mode)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    heavy_kernel[(x.numel() // 1024,)](x, out, 200, BLOCK=1024)
    end.record()
    torch.cuda.synchronize()
    if mode:
        profiler.finalize()
    return start.elapsed_time(end)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=["pcsampling", "pcsampling:interval=16",
                                                       "pcsampling:collection=serialized"])
    args = parser.parse_args()
    out_dir = tempfile.mkdtemp()
    launch_bound(None, 10, out_dir), gpu_bound(None, out_dir)  # compile, warm up
    launch_bound("pcsampling", 10, out_dir)  # CUPTI's first start
    rows = []
    for mode in args.modes:
        lb, gb = {"none": [], mode: []}, {"none": [], mode: []}
        for _ in range(args.repeats):
            for m in (None, mode):
                key = m or "none"
                try:
                    lb[key].append(launch_bound(m, args.launches, out_dir))
                    gb[key].append(gpu_bound(m, out_dir))
                except Exception as error:  # report and go on with the next mode
                    print(f"{mode}: {type(error).__name__}: {error}", file=sys.stderr)
                    profiler.finalize()
        if not lb[mode]:
            continue
        row = {"mode": mode, "launches": args.launches,
               "launch_bound_ratio": statistics.median(lb[mode]) / statistics.median(lb["none"]),
               "gpu_bound_ratio": statistics.median(gb[mode]) / statistics.median(gb["none"])}
        print(json.dumps(row), flush=True)
        rows.append(row)
    print("| mode | launch-bound (x, target <= 20) | GPU-bound per kernel (x, target < 1.1) |")
    for r in rows:
        print(f"| {r['mode']} | {r['launch_bound_ratio']:.2f} | {r['gpu_bound_ratio']:.3f} |")


if __name__ == "__main__":
    main()
