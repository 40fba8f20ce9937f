"""Benchmark (not a test): wall time, CPU time and peak memory of flagtree-profiler-viewer.

Usage: PYTHONPATH=src python bench/viewer_bench.py [--nodes 100000 1000000] [--repeats 5]
                                                   [--bare] [--deep 100000]

Each run is a fresh child process (``python -m flagtree.profiler.viewer ... > /dev/null``),
as a user runs it; its CPU time and peak resident memory come from the child's own
rusage (os.wait4). Profiles are written by another process, so this one stays small (a
spawned child's ru_maxrss starts at its parent's resident size). Medians over the repeats are printed with the peak as a multiple of
the file's size. Profiles are generated in the shape the profiler writes: ~1/3 scopes and
python frames, the rest kernels with device ids, flops16, bytes and launch metadata
(``--bare`` leaves out "kind" and the metadata, which makes files ~40% smaller for the same
tree). ``--deep N`` adds an N-deep chain.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

DEVICE_INFO = {"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": 1980000,
                              "memory_clock_rate": 2619000, "bus_width": 6144}}}
MAX_DEPTH = 40
CASES = {
    "default": [],
    "time/ms,count,tflop16/s,util": ["-m", "time/ms,count,tflop16/s,util"],
    "--print-sorted": ["--print-sorted"],
}


def _tree(total, rng):
    """Parent index and 'is scope' flag per node; node 0 is ROOT."""
    parents, scope = [None], [True]
    scopes = [(0, 0)]
    for i in range(1, total):
        # Half the time nest under the newest scope so the tree gets deep too.
        parent, depth = scopes[-1] if rng.random() < 0.5 else rng.choice(scopes)
        is_scope = rng.random() < 0.3 and depth < MAX_DEPTH
        if is_scope:
            scopes.append((i, depth + 1))
        parents.append(parent)
        scope.append(is_scope)
    return parents, scope


def _node_head(i, is_scope, rng, bare):
    """The node's JSON up to its children list."""
    if i == 0:
        return '{"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": ['
    if is_scope:
        frame = {"name": f"/src/app/module_{i % 97}.py:{i}@func_{i}", "type": "function"}
        metrics = {"cpu_time (ns)": i}
        extra = {}
    else:
        frame = {"name": f"kernel_{i}", "type": "function"}
        metrics = {"time (ns)": rng.randint(1_000, 5_000_000), "count": rng.randint(1, 100),
                   "device_id": 0, "device_type": 1, "flops16": rng.randint(0, 10**12),
                   "bytes": rng.randint(0, 10**9)}
        extra = {} if bare else {"metadata": {
            "grid": [rng.randint(1, 4096), 1, 1], "block": [128, 1, 1], "registers": 32,
            "static_shared_memory": 0, "dynamic_shared_memory": rng.choice([0, 16384])}}
    if not bare:
        frame["kind"] = "scope" if is_scope else "kernel"
    head = json.dumps({"frame": frame, "metrics": metrics, **extra})
    return head[:-1] + ', "children": ['


def write_profile(path, total, bare, seed=0):
    """Write a random ``total``-node profile without building it in memory."""
    rng = random.Random(seed)
    parents, scope = _tree(total, rng)
    children = [[] for _ in range(total)]
    for i in range(1, total):
        children[parents[i]].append(i)
    with open(path, "w") as out:
        out.write("[")
        stack = [(0, 0)]  # (node, next child position); heads written on the way down
        out.write(_node_head(0, True, rng, bare))
        while stack:
            node, at = stack[-1]
            kids = children[node]
            if at < len(kids):
                stack[-1] = (node, at + 1)
                if at:
                    out.write(", ")
                out.write(_node_head(kids[at], scope[kids[at]], rng, bare))
                stack.append((kids[at], 0))
            else:
                out.write("]}")
                stack.pop()
        out.write(", " + json.dumps(DEVICE_INFO) + "]")


def write_chain(path, depth):
    with open(path, "w") as out:
        out.write("[")
        for level in range(depth):
            name = "ROOT" if level == 0 else f"s{level}"
            out.write('{"frame": {"name": "%s"}, "metrics": {"time (ns)": 1, "count": 1}, '
                      '"children": [' % name)
        out.write('{"frame": {"name": "k"}, "metrics": {"time (ns)": 1000, "count": 1, '
                  '"device_id": 0, "device_type": 1}, "children": []}')
        out.write("]}" * depth + ", {}]")


def run_once(argv):
    """(wall s, CPU s, peak MiB) of one viewer process."""
    env = dict(os.environ)
    with open(os.devnull, "w") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "flagtree.profiler.viewer", *argv],
                                stdout=sink, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if status != 0:
        raise SystemExit(f"viewer failed ({status}): {err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(label, path, argv, repeats):
    runs = [run_once(argv + [path]) for _ in range(repeats)]
    wall, cpu, peak = (statistics.median(column) for column in zip(*runs))
    size_mib = os.path.getsize(path) / 2**20
    print(f"{label:<44} wall {wall:6.2f} s  cpu {cpu:6.2f} s  peak {peak:7.1f} MiB "
          f"({peak / size_mib:.1f}x the {size_mib:.1f} MiB file)", flush=True)


def _generate(kind, path, size, bare):
    """Write a profile from a separate process, so that this one stays small: a spawned
    child's ru_maxrss starts at its parent's resident size."""
    argv = [sys.executable, __file__, "--write", kind, path, str(size)] + (["--bare"] if bare else [])
    subprocess.run(argv, check=True)


def main():
    if sys.argv[1:2] == ["--write"]:
        kind, path, size = sys.argv[2], sys.argv[3], int(sys.argv[4])
        if kind == "tree":
            write_profile(path, size, "--bare" in sys.argv)
        else:
            write_chain(path, size)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bare", action="store_true", help="no kind/metadata in the nodes")
    parser.add_argument("--deep", type=int, default=100_000, help="chain depth (0: none)")
    options = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}, medians of {options.repeats}")
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in options.nodes:
            path = os.path.join(tmp, f"bench{nodes}.hatchet")
            _generate("tree", path, nodes, options.bare)
            repeats = options.repeats if nodes <= 200_000 else max(1, options.repeats // 2)
            for name, argv in CASES.items():
                measure(f"{nodes:,} nodes, {name}", path, argv, repeats)
            os.remove(path)
        if options.deep:
            path = os.path.join(tmp, "chain.hatchet")
            _generate("chain", path, options.deep, False)
            measure(f"{options.deep:,}-deep chain, default", path, [], options.repeats)


if __name__ == "__main__":
    main()
