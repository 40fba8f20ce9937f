"""PC-sampling overhead, interleaved baseline / sampled in one process, median ratios:
  launch-bound: N tiny Triton launches, wall time end to end (start .. finalize included), vs no profiler;
  GPU-bound end to end: one long kernel, wall time start .. finalize, vs no profiler;
  GPU-bound per kernel: the KERNEL's device time, i.e. the kernel node's `time (ns)` / `count` in the
    session's .hatchet (CUPTI activity), with sampling vs a plain `nvidia` session (same instrument, no
    sampling). CUDA events around the launch would include the host's cuCtxSynchronize/Start before
    the kernel and Stop after it (range=launch), during which the GPU idles.
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


def kernel_ns(path, name):
    """Mean device time of kernel `name`: time (ns) / count summed over its nodes in a .hatchet."""
    with open(path) as f:
        root = json.load(f)[0]
    total, count, stack = 0.0, 0, [root]
    while stack:
        node = stack.pop()
        stack.extend(node.get("children", []))
        m = node.get("metrics", {})
        if node["frame"].get("kind") == "kernel" and name in node["frame"]["name"] and "count" in m:
            total, count = total + m["time (ns)"], count + m["count"]
    if not count:
        raise RuntimeError(f"no kernel node {name!r} in {path}")
    return total / count


def gpu_bound(mode, out_dir, backend="cupti"):
    """(wall seconds start .. finalize, kernel device ns from the .hatchet or None without a session)."""
    x = torch.rand(1 << 24, device="cuda")
    out = torch.empty_like(x)
    torch.cuda.synchronize()
    base = os.path.join(out_dir, "gb")
    t = time.perf_counter()
    if mode or backend == "nvidia":
        profiler.start(base, backend=backend, mode=mode)
    heavy_kernel[(x.numel() // 1024,)](x, out, 200, BLOCK=1024)
    torch.cuda.synchronize()
    if not (mode or backend == "nvidia"):
        return time.perf_counter() - t, None
    profiler.finalize()
    return time.perf_counter() - t, kernel_ns(base + ".hatchet", "heavy_kernel")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=["pcsampling", "pcsampling:range=session",
                                                       "pcsampling:interval=16",
                                                       "pcsampling:range=session,interval=16",
                                                       "pcsampling:collection=serialized"])
    args = parser.parse_args()
    out_dir = tempfile.mkdtemp()
    launch_bound(None, 10, out_dir), gpu_bound(None, out_dir), gpu_bound(None, out_dir, "nvidia")  # compile, warm up
    launch_bound("pcsampling", 10, out_dir)  # CUPTI's first start
    rows = []
    for mode in args.modes:
        lb = {"none": [], mode: []}
        gb_wall = {"none": [], mode: []}
        kernel = {"nvidia": [], mode: []}  # device ns of heavy_kernel from each session's .hatchet
        for _ in range(args.repeats):
            try:
                lb["none"].append(launch_bound(None, args.launches, out_dir))
                gb_wall["none"].append(gpu_bound(None, out_dir)[0])
                kernel["nvidia"].append(gpu_bound(None, out_dir, backend="nvidia")[1])
                lb[mode].append(launch_bound(mode, args.launches, out_dir))
                wall, ns = gpu_bound(mode, out_dir)
                gb_wall[mode].append(wall)
                kernel[mode].append(ns)
            except Exception as error:  # report and go on with the next mode
                print(f"{mode}: {type(error).__name__}: {error}", file=sys.stderr)
                profiler.finalize()
        if not kernel[mode] or not kernel["nvidia"]:
            continue
        med = statistics.median
        row = {"mode": mode, "launches": args.launches,
               "launch_bound_ratio": med(lb[mode]) / med(lb["none"]),
               "gpu_bound_kernel_ratio": med(kernel[mode]) / med(kernel["nvidia"]),
               "gpu_bound_end_to_end_ratio": med(gb_wall[mode]) / med(gb_wall["none"]),
               "kernel_ns": med(kernel[mode]), "kernel_ns_nvidia": med(kernel["nvidia"])}
        print(json.dumps(row), flush=True)
        rows.append(row)
    print("| mode | launch-bound end to end (x, target <= 20) | GPU-bound per kernel, device time vs nvidia "
          "session (x, target < 1.1) | GPU-bound end to end (x) |")
    for r in rows:
        print(f"| {r['mode']} | {r['launch_bound_ratio']:.2f} | {r['gpu_bound_kernel_ratio']:.3f} "
              f"| {r['gpu_bound_end_to_end_ratio']:.2f} |")


if __name__ == "__main__":
    main()
