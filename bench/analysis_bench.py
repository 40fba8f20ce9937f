"""Benchmark (not a test): flagtree.profiler.read(...).to_dataframe() against the viewer.

Usage: PYTHONPATH=src python bench/analysis_bench.py [--nodes 1000000] [--repeats 3]
                                                     [--deep 100000] [--out FILE.json]

On one generated profile (bench/viewer_bench.py's shape: scopes, python frames, kernels with
flops16/bytes/device ids), each case is a fresh child process, as a user runs it, and the
cases are interleaved repeat by repeat so that a busy machine slows them alike:

- viewer default: ``python -m flagtree.profiler.viewer FILE > /dev/null`` (time/s);
- viewer, same columns: ``-m`` with the derived columns read() gives the file by default;
- read + to_dataframe, default columns (pandas imported in the child: its import counts);
- read + to_dataframe with ``metrics="time/s"``, the viewer default's one column.

Wall medians and their ratios are printed and written to ``--out`` (JSON). ``--deep N`` also
times read, to_dataframe, to_graphframe and a walk of an N-deep chain in one process.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from viewer_bench import write_chain, write_profile  # noqa: E402

CHILD = """
import sys
from flagtree.profiler import read
metrics = sys.argv[2] or None
frame = read(sys.argv[1], metrics=metrics).to_dataframe()
assert len(frame) > 0
import os
os._exit(0)
"""

DEEP = """
import json, sys, time
start = time.perf_counter()
from flagtree.profiler import read
profile = read(sys.argv[1])
read_s = time.perf_counter() - start
t = time.perf_counter(); frame = profile.to_dataframe(); frame_s = time.perf_counter() - t
t = time.perf_counter(); graph = profile.to_graphframe(); graph_s = time.perf_counter() - t
t = time.perf_counter(); deepest = max(node.depth for node in profile.nodes())
walk_s = time.perf_counter() - t
print(json.dumps({"read_s": read_s, "to_dataframe_s": frame_s, "to_graphframe_s": graph_s,
                  "walk_s": walk_s, "depth": deepest, "rows": len(frame)}))
"""


def wall(argv, stdout=subprocess.DEVNULL):
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=stdout)
    return time.perf_counter() - start


def default_columns(path):
    out = subprocess.run([sys.executable, "-c", "import sys; from flagtree.profiler import read; "
                          "print(','.join(read(sys.argv[1]).metrics))", path],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def compare(path, repeats):
    columns = default_columns(path)
    cases = {
        "viewer default (time/s)": [sys.executable, "-m", "flagtree.profiler.viewer", path],
        f"viewer -m {columns}": [sys.executable, "-m", "flagtree.profiler.viewer", "-m", columns, path],
        "read + to_dataframe, default columns": [sys.executable, "-c", CHILD, path, ""],
        "read + to_dataframe, metrics=time/s": [sys.executable, "-c", CHILD, path, "time/s"],
    }
    runs = {name: [] for name in cases}
    for _ in range(repeats):
        for name, argv in cases.items():
            runs[name].append(wall(argv))
    medians = {name: statistics.median(times) for name, times in runs.items()}
    names = list(cases)
    ratios = {
        "default columns / viewer with the same columns": medians[names[2]] / medians[names[1]],
        "default columns / viewer default": medians[names[2]] / medians[names[0]],
        "time/s only / viewer default": medians[names[3]] / medians[names[0]],
    }
    return {"columns": columns, "runs_s": runs, "median_s": medians, "ratios": ratios}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--deep", type=int, default=100_000)
    parser.add_argument("--out", help="write the figures here as JSON")
    options = parser.parse_args()
    result = {"command": " ".join([os.path.basename(sys.executable)] + sys.argv),
              "python": sys.version.split()[0], "cpus": os.cpu_count(),
              "load_before": os.getloadavg(), "nodes": options.nodes, "repeats": options.repeats}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.hatchet")
        write_profile(path, options.nodes, bare=False)
        result["file_mib"] = os.path.getsize(path) / 2**20
        result.update(compare(path, options.repeats))
        os.remove(path)
        if options.deep:
            chain = os.path.join(tmp, "chain.hatchet")
            write_chain(chain, options.deep)
            out = subprocess.run([sys.executable, "-c", DEEP, chain], check=True,
                                 capture_output=True, text=True)
            result["deep_chain"] = dict(json.loads(out.stdout), levels=options.deep)
    result["load_after"] = os.getloadavg()
    text = json.dumps(result, indent=2)
    print(text)
    if options.out:
        folder = os.path.dirname(os.path.abspath(options.out))
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as handle:
            handle.write(text + "\n")
        os.replace(handle.name, options.out)


if __name__ == "__main__":
    main()
