"""Render saved overhead results (bench/results/overhead-*.json) as the README's table.

    python bench/report.py bench/results/overhead-A.json[:launch,mix] bench/results/overhead-B.json[:gpu]
The optional ":workloads" suffix picks which workloads to take from each file.
"""
import json
import sys

NAMES = {"ours": "FlagTree", "proton": "Proton", "floor": "CUPTI floor", "torch": "torch.profiler"}
WORKLOADS = {"launch": "launch-bound", "gpu": "GPU-bound", "mix": "transformer mix"}


def rows(path, wanted):
    with open(path) as f:
        record = json.load(f)
    for result in record["results"]:
        if wanted and result["workload"] not in wanted or "error" in result["configs"]:
            continue
        for config, r in result["configs"].items():
            yield (f"| {WORKLOADS[result['workload']]} | {NAMES[result['family']]} | {config} | "
                   f"**{r['ratio']:.3f}x** | {r['median_s']:.3f} | {r['none_median_s']:.3f} | "
                   f"{r['finalize_median_s']:.3f} |")


def main(argv):
    print("| workload | profiler | configuration | ratio to no profiler | median s | no-profiler s | finalize s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for arg in argv:
        path, _, picks = arg.partition(":")
        for row in rows(path, set(picks.split(",")) if picks else None):
            print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
