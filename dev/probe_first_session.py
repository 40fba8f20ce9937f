"""The first session's small costs (issue 18 item 1), each in a fresh process with torch + cuBLAS
busy: the device-facts query cold before any session and cold inside one (CUPTI subscribed),
and the steps of the first start. Prints one line per process.

    python3 dev/probe_first_session.py [--runs 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import json, os, sys, tempfile, time
import torch
a = torch.randn(256, 256, device="cuda"); (a @ a).sum().item()
t = time.perf_counter
t0 = t(); import flagtree.profiler as profiler; from flagtree.profiler import _native; t1 = t()
out = {"import_ms": (t1 - t0) * 1e3}
if sys.argv[1] == "before":
    t0 = t(); _native.cuda_devices(); out["cuda_devices_cold_ms"] = (t() - t0) * 1e3
    t0 = t(); _native.cuda_devices(); out["cuda_devices_warm_ms"] = (t() - t0) * 1e3
else:
    base = os.path.join(tempfile.mkdtemp(), "p")
    t0 = t(); profiler.start(base, backend="nvidia"); out["start_ms"] = (t() - t0) * 1e3
    t0 = t(); _native.cuda_devices(); out["cuda_devices_cold_in_session_ms"] = (t() - t0) * 1e3
    a @ a; torch.cuda.synchronize()
    t0 = t(); profiler.finalize(); out["finalize_ms"] = (t() - t0) * 1e3
    profiler.release()
print(json.dumps({k: round(v, 3) for k, v in out.items()}))
'''


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for _ in range(args.runs):
        for where in ("before", "inside"):
            done = subprocess.run([sys.executable, "-c", CHILD, where], capture_output=True, text=True, timeout=120)
            print(where, done.stdout.strip() or done.stderr.strip()[-400:], flush=True)


if __name__ == "__main__":
    main()
