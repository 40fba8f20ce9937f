"""What the dev probes on bench/serving_loop.py's model share: a block with no profiler, the
device's used memory, the ratio of each configuration's blocks to their neighbouring ones with
none, and a first nvidia session that compiles the model's kernels and picks the libcupti the
process then uses."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_loop  # noqa: E402

profiler = serving_loop.profiler


def plain_block(model, steps):
    """Seconds a step of `steps` steps with no profiler."""
    began = time.perf_counter()
    for _ in range(steps):
        model()
    return (time.perf_counter() - began) / steps


def used_mb():
    """The device's used memory in MB (cudaMemGetInfo: every process's and the driver's, CUPTI's
    included, which torch's own counters do not see)."""
    free, total = serving_loop.torch.cuda.mem_get_info()
    return (total - free) / 2**20


def report(rows, configs, counted):
    """Prints, for each of `configs`, the median ratio of its blocks to the none blocks beside them,
    its median step and the count per block (`counted`: what it counts). `rows`: (config, seconds
    a step, count), each configuration's block between two none blocks."""
    for config in configs:
        ratios = [s / ((rows[i - 1][1] + rows[i + 1][1]) / 2) for i, (c, s, _) in enumerate(rows) if c == config]
        step_us = statistics.median(s for c, s, _ in rows if c == config) * 1e6
        print(f"{config:8s} ratio median {statistics.median(ratios):.4f} (blocks "
              f"{', '.join(f'{r:.3f}' for r in ratios)})  {step_us:.1f} us a step"
              f"  {counted} a block {[n for c, _, n in rows if c == config]}")
    print(f"none     {statistics.median(s for c, s, _ in rows if c == 'none') * 1e6:.1f} us a step")


def first_nvidia_session(model, folder):
    """Warms the model up, then runs it once in an nvidia session (which picks the libcupti) and
    releases CUPTI."""
    for _ in range(20):
        model()
    profiler.start(os.path.join(folder, "first"), backend="nvidia")
    model()
    profiler.finalize()
    profiler.release()
