"""backend="device_timer" against no profiler, the nvidia backend (CUPTI) and CUPTI alone, on the
GPU machine, in one run.

Workloads (the same Triton add kernel, tests/examples' add_kernel, unless said):
* launch: 20,000 launches of a one-block add (launch-bound: the host path per launch);
* kernel50: 50 launches of a 16M-element add (16,384 blocks, ~50 us each on an H200);
* launch_a1, launch_a5, launch_a20: 20,000 launches of one-block kernels of 1, 5 and 20
  arguments (bench/arg_kernels.py): whether the per-launch cost depends on the signature.

Two processes, each interleaving its configurations with no-profiler runs (none, A, none, B, ...)
after a warm-up, each ratio against the mean of the two no-profiler runs around it:
* this one: device_timer (no CUPTI is ever loaded here);
* a child: the nvidia backend (shadow/tree) and CUPTI's kernel activity alone (records discarded).
Ratios with start() and finalize() (median and its 95% bootstrap interval over the reps) and of the loop alone (launches and the
final synchronize; per_launch_extra_ns is its excess per launch), with start and finalize times. kernel50 also reports the GPU time of
its 50 launches (CUDA events) over none's: the stamped kernel's own cost. Agreement: per kernel
(scope, name), the device_timer's mean time per launch against the nvidia backend's (CUPTI) from
the child, and the launch counts of both. For the device timer on the 20,000-launch workloads,
"fine": the same ratio from 40 pairs of 1,000-launch blocks in one session, active against
deactivated, with the direct measurement's start and finalize added (fine()).

    python bench/device_timer.py --reps 8 [--out DIR]
    FLAGTREE_BENCH_WORKLOADS=launch_a1,launch_a5 python bench/device_timer.py ...   # some only
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
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
sys.path.insert(0, HERE)
from stats import median_ci  # noqa: E402

N_BIG = 1 << 24
LAUNCHES = {"launch": 20_000, "kernel50": 50, "launch_a1": 20_000, "launch_a5": 20_000, "launch_a20": 20_000}


def workload(name):
    import torch
    from triton_kernels import add_kernel

    if name.startswith("launch_a"):
        return signature_workload(name, int(name[len("launch_a"):]))

    n = 1024 if name == "launch" else N_BIG
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    grid = (n // 1024,)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(2)]

    def run(scope, launches=None):
        with scope(name):
            events[0].record()
            for _ in range(launches or LAUNCHES[name]):
                add_kernel[grid](x, y, out, n, BLOCK=1024)
            events[1].record()
        torch.cuda.synchronize()
        return events[0].elapsed_time(events[1]) / 1e3  # GPU seconds of the loop

    return run


def signature_workload(name, arguments):
    import torch
    from arg_kernels import launcher

    launch = launcher(arguments, torch)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(2)]

    def run(scope, launches=None):
        with scope(name):
            events[0].record()
            for _ in range(launches or LAUNCHES[name]):
                launch()
            events[1].record()
        torch.cuda.synchronize()
        return events[0].elapsed_time(events[1]) / 1e3

    return run


def null_scope(name):
    import contextlib

    return contextlib.nullcontext()


class Config:
    def __init__(self, name, outdir):
        self.name, self.outdir, self.count = name, outdir, 0
        self.mode = name.partition("/")[2] or None  # "device_timer/<mode>"
        self.last_base = None

    def start(self):
        import flagtree.profiler as prof

        self.count += 1
        self.last_base = os.path.join(self.outdir, f"{self.name.replace('/', '_')}{self.count}")
        if self.name.startswith("device_timer"):  # "device_timer" or "device_timer/<mode>"
            prof.start(self.last_base, backend="device_timer", mode=self.mode)
            return prof.scope
        if self.name == "nvidia":
            prof.start(self.last_base, backend="nvidia")
            return prof.scope
        from flagtree.profiler import _native
        from flagtree.profiler.backends.nvidia.backend import cupti_candidates

        path = os.environ.get("FLAGTREE_PROFILER_CUPTI_PATH") or cupti_candidates(13)[0]
        _native.testing.cupti_floor_start(path, 8 << 20, False)
        return null_scope

    def stop(self):
        import flagtree.profiler as prof

        if self.name.startswith("device_timer") or self.name == "nvidia":
            prof.finalize()
            prof.release()
        else:
            from flagtree.profiler import _native

            _native.nvidia.cupti_release()


def kernel_times(base):
    """{"scope/kernel": (count, mean ns)} of a tree output."""
    with open(base + ".hatchet") as f:
        root = json.load(f)[0]
    out = {}
    stack = [(root, "")]
    while stack:
        node, path = stack.pop()
        for child in node["children"]:
            name = f"{path}/{child['frame']['name']}" if path else child["frame"]["name"]
            if child["frame"].get("kind") == "kernel":
                m = child["metrics"]
                out[name] = (int(m["count"]), m["time (ns)"] / m["count"])
            stack.append((child, name))
    return out


def session_facts(config):
    """What the last session's metadata says of how its kernels were timed (device_timer's counts)."""
    if config.last_base is None or not os.path.exists(config.last_base + ".meta.json"):
        return None
    with open(config.last_base + ".meta.json") as f:
        meta = json.load(f)
    return {k: v for k, v in meta.items() if k.startswith(("device_timer_", "time_source"))
            and isinstance(v, (int, float, str)) and k != "device_timer_stamps"}


def chosen():
    """The workloads this run measures: FLAGTREE_BENCH_WORKLOADS (comma-separated names) or all."""
    names = [n for n in os.environ.get("FLAGTREE_BENCH_WORKLOADS", "").split(",") if n]
    unknown = sorted(set(names) - set(LAUNCHES))
    if unknown:
        raise SystemExit(f"FLAGTREE_BENCH_WORKLOADS: unknown workloads {unknown}; known: {sorted(LAUNCHES)}")
    return [w for w in LAUNCHES if not names or w in names]


def measure(config_names, reps, outdir):
    runs = {w: workload(w) for w in chosen()}
    configs = [Config(c, outdir) for c in config_names]
    for w, run in runs.items():  # warm-up: plain and stamped compiles, each profiler once
        run(null_scope)
        for c in configs:
            run(c.start())
            c.stop()
    result = {}
    for w, run in runs.items():
        samples = {c.name: [] for c in configs}
        gpu = {c.name: [] for c in configs}
        finals = {c.name: [] for c in configs}
        loops = {c.name: [] for c in configs}
        starts = {c.name: [] for c in configs}
        agreement = {}

        def timed_none():
            t0 = time.perf_counter()
            g = run(null_scope)
            return time.perf_counter() - t0, g

        before = timed_none()
        for _ in range(reps):
            for c in configs:
                t0 = time.perf_counter()
                scope = c.start()
                ts = time.perf_counter()
                g = run(scope)
                t1 = time.perf_counter()
                c.stop()
                t2 = time.perf_counter()
                after = timed_none()
                none = (before[0] + after[0]) / 2
                samples[c.name].append((t2 - t0) / none)
                loops[c.name].append((t1 - ts) / none)
                gpu[c.name].append(g / ((before[1] + after[1]) / 2))
                finals[c.name].append(t2 - t1)
                starts[c.name].append(ts - t0)
                if c.name != "floor":
                    agreement[c.name] = kernel_times(c.last_base)
                before = after
        result[w] = {c.name: {"ratio_with_start_finalize": statistics.median(samples[c.name]),
                              "ratio_ci95": median_ci(samples[c.name]),
                              "loop_ratio": statistics.median(loops[c.name]),
                              "start_median_s": statistics.median(starts[c.name]),
                              "gpu_time_ratio": statistics.median(gpu[c.name]),
                              "finalize_median_s": statistics.median(finals[c.name]),
                              "per_launch_extra_ns": (statistics.median(loops[c.name]) - 1) * before[0]
                              / LAUNCHES[w] * 1e9,
                              "kernels": agreement.get(c.name), "facts": session_facts(c)} for c in configs}
        result[w]["none_median_s"] = before[0]
        for c in configs:
            if c.name.startswith("device_timer") and LAUNCHES[w] >= FINE_BLOCK:
                result[w][c.name]["fine"] = fine(run, c, result[w][c.name], before[0], LAUNCHES[w])
    return result


FINE_BLOCK, FINE_PAIRS = 1_000, 40


def fine(run, config, direct, none_s, launches):
    """The loop ratio again from short blocks: FINE_PAIRS pairs of FINE_BLOCK launches in one
    device_timer session, active against deactivated (which launches the plain kernels through
    Triton's own path, as with no profiler), in alternating order, each pair 40 ms or less; a
    host whose speed changes over seconds moves a pair much less than it moves two 20,000-launch
    runs. With the direct measurement's start and finalize added per `launches` launches."""
    import flagtree.profiler as prof

    sid = prof.start(os.path.join(config.outdir, f"{config.name.replace('/', '_')}-fine"), backend="device_timer",
                     mode=config.mode)
    ratios = []
    for pair in range(FINE_PAIRS):
        took = {}
        for active in ((True, False) if pair % 2 else (False, True)):
            (prof.activate if active else prof.deactivate)(sid)
            t0 = time.perf_counter()
            run(null_scope, FINE_BLOCK)
            took[active] = time.perf_counter() - t0
        ratios.append(took[True] / took[False])
    prof.finalize(sid)
    prof.release()
    fixed = (direct["start_median_s"] + direct["finalize_median_s"]) / none_s
    low, high = median_ci(ratios)
    return {"block_launches": FINE_BLOCK, "pairs": FINE_PAIRS, "loop_ratio": statistics.median(ratios),
            "loop_ratio_ci95": [low, high], "ratio_with_start_finalize": statistics.median(ratios) + fixed,
            "ratio_with_start_finalize_ci95": [round(low + fixed, 4), round(high + fixed, 4)]}


def compare(ours, cupti):
    """Per kernel: device_timer's mean against CUPTI's, and both counts."""
    rows = {}
    for key, (count, mean) in (ours or {}).items():
        other = (cupti or {}).get(key)
        if other is None:
            rows[key] = {"device_timer": [count, mean], "cupti": None}
            continue
        diff = mean - other[1]
        rows[key] = {"count_device_timer": count, "count_cupti": other[0], "mean_ns_device_timer": mean,
                     "mean_ns_cupti": other[1], "diff_ns": diff, "diff_rel": diff / other[1] if other[1] else None}
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--out")
    parser.add_argument("--configs", default="device_timer", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as outdir:
        mine = measure(args.configs.split(","), args.reps, outdir)
    if args.configs != "device_timer":  # the child: print and go
        print(json.dumps(mine))
        return
    child = subprocess.run([sys.executable, os.path.abspath(__file__), "--reps", str(args.reps),
                            "--configs", "nvidia,floor"], capture_output=True, text=True)
    if child.returncode:
        sys.stderr.write(child.stderr)
        raise SystemExit("the CUPTI process failed")
    theirs = json.loads(child.stdout.strip().splitlines()[-1])
    report = {"machine": os.uname().nodename, "reps": args.reps, "workloads": {}}
    for w in chosen():
        row = {"none_median_s": mine[w]["none_median_s"], "cupti_process_none_median_s": theirs[w]["none_median_s"]}
        for name, values in list(mine[w].items()) + list(theirs[w].items()):
            if isinstance(values, dict):
                row[name] = {k: v for k, v in values.items() if k != "kernels"}
        row["agreement"] = compare(mine[w]["device_timer"]["kernels"], theirs[w]["nvidia"]["kernels"])
        report["workloads"][w] = row
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, time.strftime("device_timer-%Y%m%d-%H%M%S.json")), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
