"""Benchmark (not a test): the HTML report's size and its draw time in headless Chromium.

Usage: PYTHONPATH=src python bench/report_bench.py [--sizes 10000,100000] [--repeats 3]
For each size: a generated profile (bench/viewer_bench.py's generator: kernels with time, count,
FLOP and bytes, python frames with CPU time), the report's file size (the bar: < 2 MB at 10,000
nodes), the time to write it, and Chromium's figures: milliseconds from navigation start to the
first frame drawn, measured inside the page (the bar: < 3 s at 100,000 nodes), and the wall time
of the whole headless run (browser start included). Needs `chromium` on PATH for the draw time.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from viewer_bench import write_profile  # noqa: E402  (same generator as the text viewer's bench)

from flagtree.profiler.viewer.cli import main  # noqa: E402

SIZE_BAR = {10_000: 2 * 1024 * 1024}
DRAW_BAR_MS = {100_000: 3000.0}


def write_report(profile_path, html_path):
    start = time.perf_counter()
    with open(os.devnull, "w") as sink:
        stdout, sys.stdout = sys.stdout, sink
        try:
            status = main(["--html", html_path, profile_path])
        finally:
            sys.stdout = stdout
    if status != 0:
        raise SystemExit(f"viewer --html failed with status {status}")
    return time.perf_counter() - start


def draw_in_chromium(binary, html_path, profile_dir):
    """(ms to first draw inside the page, nodes drawn, wall seconds of the headless run)."""
    args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={profile_dir}", "--window-size=1280,900", "--dump-dom",
            "file://" + os.path.abspath(html_path)]
    start = time.perf_counter()
    dom = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    wall = time.perf_counter() - start
    ready = re.search(r'data-ready-ms="([0-9.]+)"', dom)
    drawn = re.search(r'data-drawn-nodes="([0-9]+)"', dom)
    if not ready or not drawn:
        raise SystemExit("the report's script did not finish in Chromium")
    return float(ready.group(1)), int(drawn.group(1)), wall


def run(sizes, repeats):
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in sizes:
            profile_path = os.path.join(tmp, f"p{nodes}.hatchet")
            html_path = os.path.join(tmp, f"p{nodes}.html")
            write_profile(profile_path, nodes, bare=False)
            write_s = statistics.median(write_report(profile_path, html_path) for _ in range(repeats))
            row = {"nodes": nodes, "html_bytes": os.path.getsize(html_path), "write_s": round(write_s, 3)}
            if binary:
                runs = [draw_in_chromium(binary, html_path, os.path.join(tmp, "chrome")) for _ in range(repeats)]
                row.update(ready_ms=statistics.median(r[0] for r in runs), drawn_nodes=runs[0][1],
                           chromium_wall_s=round(statistics.median(r[2] for r in runs), 3))
            results.append(row)
            print(_describe(row))
    return results


def _describe(row):
    nodes, size = row["nodes"], row["html_bytes"]
    text = f"{nodes} nodes: report {size / 1e6:.2f} MB, written in {row['write_s']:.2f} s"
    if nodes in SIZE_BAR:
        text += f" (bar < 2 MiB = {SIZE_BAR[nodes] / 1e6:.2f} MB: {'ok' if size < SIZE_BAR[nodes] else 'OVER'})"
    if "ready_ms" in row:
        text += (f"; Chromium drew {row['drawn_nodes']} nodes {row['ready_ms']:.0f} ms after navigation"
                 f" (headless run {row['chromium_wall_s']:.2f} s)")
        if nodes in DRAW_BAR_MS:
            text += f" (bar < {DRAW_BAR_MS[nodes]:.0f} ms: {'ok' if row['ready_ms'] < DRAW_BAR_MS[nodes] else 'OVER'})"
    else:
        text += "; no chromium on PATH, draw time not measured"
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    run([int(s) for s in options.sizes.split(",")], options.repeats)
