"""What hardware counters (nvidia backend, mode "metrics=...") cost, on the GPU machine.

Counters are expensive by nature: each launch is serialised, and a metric set that needs several
passes replays each kernel once per pass (with device memory saved and restored around the
replays). Measured here, interleaved in one process (none, A, none, B, ... after a warm-up), median
over repetitions of the ratio to the mean of the two neighbouring no-profiler runs:

  - per kernel: a launch-bound loop of tiny one-block kernels; the extra microseconds per launch;
  - end to end: a small transformer forward (torch + Triton kernels) and bf16 matmuls.

Configurations: "tree" (the profiler without counters), "metrics 1 pass" (dram__bytes_read.sum),
"metrics default" (mode="metrics": five metrics, the passes the chip needs).

    python bench/counters_cost.py [--reps 2] [--out DIR]

Measured by the probe on the H200 (CUPTI 13.0): about 11.6 ms per launch of a tiny kernel with 2
metrics in 1 pass, against 14 us without counters.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {
    "tree": {},
    "metrics 1 pass": {"mode": "metrics=dram__bytes_read.sum"},
    "metrics default": {"mode": "metrics"},
}


def workloads():
    from workloads import GpuBound, LaunchBound, TransformerBlock

    # Sizes cut down from bench/overhead.py: every launch waits for its kernel under counters.
    return {
        "launch (200 tiny kernels)": (LaunchBound(launches=200), 200),
        "mix (transformer forward x1)": (TransformerBlock(passes=1), None),
        "gpu (20 bf16 4096^3 matmuls)": (GpuBound(matmuls=20, size=4096), 20),
    }


def null_scope(name):
    import contextlib

    return contextlib.nullcontext()


def timed(run, scope):
    t0 = time.perf_counter()
    run(scope)
    return time.perf_counter() - t0


def measure(run, reps, outdir):
    import flagtree.profiler as prof

    counter = [0]

    def profiled(config):
        counter[0] += 1
        prof.start(os.path.join(outdir, f"c{counter[0]}"), backend="nvidia", **CONFIGS[config])
        elapsed = timed(run, prof.scope)
        prof.finalize()
        return elapsed

    run(null_scope)  # compile, initialise cuBLAS
    for config in CONFIGS:
        profiled(config)  # CUPTI and the range profiler initialise once
    ratios = {c: [] for c in CONFIGS}
    seconds = {c: [] for c in CONFIGS}
    nones = []
    before = timed(run, null_scope)
    for _ in range(reps):
        for config in CONFIGS:
            elapsed = profiled(config)
            after = timed(run, null_scope)
            ratios[config].append(elapsed / ((before + after) / 2))
            seconds[config].append(elapsed)
            nones.append(after)
            before = after
    none = statistics.median(nones)
    return {"none_s": none, **{c: {"ratio": statistics.median(ratios[c]), "median_s": statistics.median(seconds[c])}
                               for c in CONFIGS}}


def passes_of_default(outdir):
    import flagtree.profiler as prof

    base = os.path.join(outdir, "passes")
    prof.start(base, backend="nvidia", mode="metrics")
    prof.finalize()
    with open(base + ".meta.json") as f:
        return json.load(f).get("counter_passes")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--out", help="folder for counters_cost.json")
    args = parser.parse_args(argv)
    results = {}
    lines = ["| workload | configuration | ratio to none | median s | extra per launch |", "| --- | --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory() as outdir:
        for name, (run, launches) in workloads().items():
            r = measure(run, args.reps, outdir)
            results[name] = r
            for config in CONFIGS:
                extra = ""
                if launches:
                    extra = f"{(r[config]['median_s'] - r['none_s']) / launches * 1e6:.0f} us"
                lines.append(f"| {name} | {config} | {r[config]['ratio']:.2f}x | {r[config]['median_s']:.4f} | {extra} |")
            print(lines[-1], flush=True)
        passes = None
        try:
            passes = passes_of_default(outdir)
        except Exception as error:  # the table matters more
            print("passes of the default set unknown:", error)
    results["default_set_passes"] = passes
    print("\n".join(lines))
    print(f"mode='metrics' (default set) needs {passes} pass(es) per kernel")
    if args.out:
        with open(os.path.join(args.out, "counters_cost.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
