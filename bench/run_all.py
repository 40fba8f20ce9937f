"""The whole overhead suite on the GPU machine: each (workload, family) in its own process,
one table of median ratios to no profiler, saved under bench/results/ with machine facts.

    python bench/run_all.py [--reps 5] [--workloads launch,gpu,mix] [--families ours,proton,torch,floor]

Family floor needs the native core built with -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON
(dev/gpu_round.sh builds it so).
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def machine():
    facts = {"host": platform.node(), "python": platform.python_version()}
    try:
        import torch
        import triton

        facts.update(torch=torch.__version__, triton=triton.__version__,
                     gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    except Exception as error:  # the table still prints without them
        facts["error"] = str(error)
    return facts


def run_one(workload, family, reps, timeout):
    cmd = [sys.executable, os.path.join(HERE, "overhead.py"), "--family", family, "--workload", workload,
           "--reps", str(reps)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["exit %d" % done.returncode]}
    return json.loads(done.stdout.strip().splitlines()[-1])["configs"]


def table(results):
    lines = ["| workload | family | configuration | ratio | median s | no-profiler s | finalize s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for (workload, family), configs in results.items():
        if "error" in configs:
            lines.append(f"| {workload} | {family} | error | {configs['error']} | | | |")
            continue
        for name, r in configs.items():
            lines.append(f"| {workload} | {family} | {name} | {r['ratio']:.3f}x | {r['median_s']:.4f} | "
                         f"{r['none_median_s']:.4f} | {r['finalize_median_s']:.4f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workloads", default="launch,gpu,mix")
    parser.add_argument("--families", default="ours,proton,torch,floor")
    parser.add_argument("--timeout", type=int, default=240)
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    results = {}
    for workload in args.workloads.split(","):
        for family in args.families.split(","):
            if family == "torch" and workload != "launch":
                continue  # reference point on the launch-bound loop only: it is slow
            try:
                results[(workload, family)] = run_one(workload, family, args.reps, args.timeout)
            except subprocess.TimeoutExpired:
                results[(workload, family)] = {"error": ["timed out"]}
            print(f"done {workload}/{family}", file=sys.stderr, flush=True)
    text = table(results)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    record = {"date": stamp, "machine": machine(), "command": " ".join(sys.argv), "reps": args.reps,
              "results": [{"workload": w, "family": f, "configs": c} for (w, f), c in results.items()],
              "table": text}
    path = os.path.join(args.out, f"overhead-{stamp}.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print(f"saved {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
