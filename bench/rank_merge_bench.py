"""Benchmark (not a test): the cross-rank tree merge at scale, 256 ranks x 10,000 nodes.

Usage: PYTHONPATH=src python bench/rank_merge_bench.py [--ranks 256] [--nodes 10000] [--dir D]
Writes one profile per rank (the same call tree, per-rank times; rank 17 is 3x slower), then
  1. times the streaming merge alone (viewer/rank_merge.py merge_files) in this process;
  2. runs the whole viewer command in a child process,
       flagtree-profiler-viewer -m time/ms,time/ms:max,time/ms:imbalance --print-sorted -d 2 DIR
     and reports its wall time and peak memory (the child's max RSS).
The bar: at most 10 s on 2 cores.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

SLOW_RANK = 17


def template(nodes, seed=0):
    """A tree shape: ~30% scopes (python frames), the rest kernels; kernels as flat indices."""
    rng = random.Random(seed)
    shape = [(None, "ROOT", False)]
    scopes = [0]
    for i in range(1, nodes):
        parent = scopes[-1] if rng.random() < 0.5 else rng.choice(scopes)
        if rng.random() < 0.3 and len(scopes) < 40:
            shape.append((parent, f"/src/app/module_{i % 97}.py:{i}@func_{i}", False))
            scopes.append(i)
        else:
            shape.append((parent, f"kernel_{i}", True))
    return shape


def rank_profile(shape, rank):
    rng = random.Random(rank)
    slow = 3.0 if rank == SLOW_RANK else 1.0
    nodes = []
    for parent, name, is_kernel in shape:
        metrics = {"time (ns)": int(rng.randint(1_000, 2_000_000) * slow), "count": rng.randint(1, 50),
                   "device_id": 0, "device_type": 1} if is_kernel else {}
        node = {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": []}
        if parent is not None:
            nodes[parent]["children"].append(node)
        nodes.append(node)
    return [nodes[0], {}]


def write_profiles(folder, ranks, nodes):
    shape = template(nodes)
    for rank in range(ranks):
        path = os.path.join(folder, f"run.rank{rank}.hatchet")
        if not os.path.exists(path):
            with open(path, "w") as out:
                json.dump(rank_profile(shape, rank), out, separators=(",", ":"))


def time_merge(folder, workers):
    """(wall s, CPU s of this process, merged nodes) of the fold alone; the GC is off, as in the
    viewer's main()."""
    import gc

    from flagtree.profiler.viewer.rank_merge import merge_files
    from flagtree.profiler.viewer.ranks import load

    files = [(p, r) for p, r, _ in load([folder])]
    gc.disable()
    try:
        began, cpu = time.perf_counter(), time.process_time()
        merge = merge_files(files, ["time (ns)"], workers=workers)
        return time.perf_counter() - began, time.process_time() - cpu, len(merge.names)
    finally:
        gc.enable()


def time_command(folder):
    """(wall s, CPU s, peak RSS MiB, stdout) of the viewer command in a child process."""
    argv = [sys.executable, "-m", "flagtree.profiler.viewer", "-m", "time/ms,time/ms:max,time/ms:imbalance",
            "--print-sorted", "-d", "2", folder]
    began = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = child.stdout.read()
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    if status != 0:
        raise SystemExit(f"viewer failed: {err.decode()[-2000:]}")
    # ru_* of the child and of the worker it forked (wait4 counts the reaped grandchildren too)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.decode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--dir", default=None, help="keep the generated profiles here (reused)")
    args = parser.parse_args()
    if args.dir is None:  # 334 MiB of profiles: removed afterwards unless --dir keeps them
        with tempfile.TemporaryDirectory(prefix="rank_merge_bench_") as folder:
            return run(folder, args)
    os.makedirs(args.dir, exist_ok=True)
    return run(args.dir, args)


def run(folder, args):
    began = time.perf_counter()
    write_profiles(folder, args.ranks, args.nodes)
    size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder)) / 2**20
    print(f"{args.ranks} profiles x {args.nodes} nodes ({size:.0f} MiB) ready in {time.perf_counter() - began:.1f} s")
    cores = len(os.sched_getaffinity(0))
    print(f"load average before: {os.getloadavg()[0]:.1f} on {cores} cores (other work there stretches wall times)")
    for workers in (1, None):
        wall, cpu, merged = time_merge(folder, workers)
        label = "1 process" if workers == 1 else "all cores"
        print(f"streaming merge alone, {label}: {wall:.2f} s wall, {cpu:.2f} s CPU in the main process, "
              f"{merged} merged nodes")
    wall, cpu, rss, out = time_command(folder)
    lines = out.splitlines()
    print(f"viewer command end to end: {wall:.2f} s wall, {cpu:.2f} s CPU, peak memory {rss:.0f} MiB (max RSS)")
    print(f"top straggler row: {lines[1].strip() if len(lines) > 1 else ''}")


if __name__ == "__main__":
    main()
