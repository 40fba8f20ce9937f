"""Benchmark (not a test): time the viewer on a generated 100,000-node profile.

Usage: PYTHONPATH=src python bench/viewer_bench.py [--nodes N] [--repeats R]
Prints the median wall time of ``flagtree.profiler.viewer.cli.main``.
"""

import argparse
import contextlib
import io
import json
import os
import random
import statistics
import tempfile
import time

from flagtree.profiler.viewer.cli import main

DEVICE_INFO = {"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": 1980000,
                              "memory_clock_rate": 2619000, "bus_width": 6144}}}

MAX_DEPTH = 40


def _node(name, metrics):
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": []}


def _kernel_metrics(rng):
    return {"time (ns)": rng.randint(1_000, 5_000_000), "count": rng.randint(1, 100),
            "device_id": 0, "device_type": 1, "flops16": rng.randint(0, 10**12),
            "bytes": rng.randint(0, 10**9)}


def make_profile(total, seed=0):
    """A random tree of ``total`` nodes: ~1/3 scopes/python frames, the rest kernels."""
    rng = random.Random(seed)
    root = _node("ROOT", {})
    scopes = [(root, 0)]
    for i in range(1, total):
        # Half the time nest under the newest scope so the tree gets deep too.
        parent, depth = scopes[-1] if rng.random() < 0.5 else rng.choice(scopes)
        if rng.random() < 0.3 and depth < MAX_DEPTH:
            child = _node(f"/src/app/module_{i % 97}.py:{i}@func_{i}", {"cpu_time (ns)": i})
            scopes.append((child, depth + 1))
        else:
            child = _node(f"kernel_{i}", _kernel_metrics(rng))
        parent["children"].append(child)
    return [root, DEVICE_INFO]


def time_main(argv, repeats):
    samples = []
    for _ in range(repeats):
        sink = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(sink):
            status = main(argv)
        samples.append(time.perf_counter() - start)
        if status != 0:
            raise SystemExit(f"viewer failed with status {status}")
    return statistics.median(samples)


def run(nodes, repeats):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.hatchet")
        with open(path, "w") as handle:
            json.dump(make_profile(nodes), handle)
        cases = {
            "default tree": [path],
            "time/ms,count,tflop16/s,util": ["-m", "time/ms,count,tflop16/s,util", path],
            "--print-sorted": ["--print-sorted", path],
        }
        for name, argv in cases.items():
            seconds = time_main(argv, repeats)
            print(f"{nodes} nodes, {name}: median {seconds:.3f} s over {repeats} runs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    run(options.nodes, options.repeats)
