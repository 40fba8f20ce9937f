"""Scale: 1,000,000 one-block launches in one session. Tree mode: resident-memory growth and
finalize time; trace mode: resident bytes per kernel record while running, file bytes per
kernel. Prints one JSON line. GPU only.

    python bench/scale.py [--launches 1000000]
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))


def rss_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def one(data, launches, outdir):
    import torch

    import flagtree.profiler as profiler
    from workloads import LaunchBound

    run = LaunchBound(launches)
    LaunchBound(100)(profiler.scope)  # warm-up outside the session
    base = os.path.join(outdir, f"scale_{data}")
    profiler.start(base, data=data)
    profiler.finalize()  # first CUPTI initialisation outside the measurement
    before = rss_bytes()
    profiler.start(base, data=data)
    t0 = time.perf_counter()
    run(profiler.scope)
    loop_s = time.perf_counter() - t0
    torch.cuda.synchronize()
    # Deliver every record before reading memory, so the stores hold all of them.
    from flagtree.profiler import _native

    _native.nvidia.cupti_flush()
    during = rss_bytes()
    t0 = time.perf_counter()
    profiler.finalize()
    finalize_s = time.perf_counter() - t0
    path = base + (".hatchet" if data == "tree" else ".chrome_trace")
    meta = json.load(open(base + ".meta.json"))
    return {"launches": launches, "records": meta["kernel_records"], "dropped": meta["dropped_records"],
            "loop_s": loop_s, "finalize_s": finalize_s, "rss_growth_mb": (during - before) / 2**20,
            "rss_bytes_per_record": (during - before) / max(1, meta["kernel_records"]),
            "file_bytes": os.path.getsize(path), "file_bytes_per_kernel": os.path.getsize(path) / max(1, launches)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=1_000_000)
    parser.add_argument("--data", default="tree,trace")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as outdir:
        result = {data: one(data, args.launches, outdir) for data in args.data.split(",")}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
