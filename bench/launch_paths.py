"""backend="device_timer" on code no one here wrote (bench/third_party_workloads.py: Liger-Kernel,
FlagGems, torch.compile default and reduce-overhead), against the nvidia backend (CUPTI) in a
child process, on the GPU machine. Per workload, after a warm-up that compiles every kernel
(so the sessions see kernels compiled before them):

* seen: one session over --steps steps; per Triton kernel name, launches and mean time of each
  backend (CUPTI's records of Triton kernels: the names of the Triton kernels compiled in that
  process); the device timer's not-timed counts and kernels stamped at first launch;
* one_session: one session over --steps steps against the same steps without a profiler;
* per_step: a session per step (start, one step, finalize) against the same steps without one;
* beside (device timer only): a device_timer and an nvidia session open at once over --steps
  steps, so that each launch is timed by the stamps and by CUPTI: the per-kernel agreement with no
  difference of process, run or GPU clock between the two sides (the stamped kernels are the
  ones CUPTI times here).
Each ratio is the median of --reps interleaved runs (none, profiled, none, ...), each against the
mean of the two no-profiler runs around it.

    python bench/launch_paths.py [--steps 20] [--reps 3] [--workloads liger,flaggems,compile,compile_ro] [--out DIR]
    FLAGTREE_PROFILER_DEVICE_TIMER_ARM=1 python bench/launch_paths.py ...   # the device timer armed before the warm-ups

Prints one JSON report and a short table; --out keeps the JSON in DIR, rewritten after each
workload (both backends), whose table line goes to stderr as it finishes.
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
ARM = "FLAGTREE_PROFILER_DEVICE_TIMER_ARM"
sys.path.insert(0, HERE)


def kernels_by_name(base):
    """{kernel name: [launches, total ns]} of a tree output, over all its contexts."""
    with open(base + ".hatchet") as f:
        root = json.load(f)[0]
    out, stack = {}, [root]
    while stack:
        node = stack.pop()
        for child in node["children"]:
            if child["frame"].get("kind") == "kernel":
                entry = out.setdefault(child["frame"]["name"], [0, 0.0])
                entry[0] += int(child["metrics"].get("count", 0))
                entry[1] += float(child["metrics"].get("time (ns)", 0.0))
            stack.append(child)
    return out


def _session(backend, base):
    import flagtree.profiler as prof

    return prof.start(base, backend=backend)


def _finalize():
    import flagtree.profiler as prof

    prof.finalize()


def _steps(step, n):
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    return time.perf_counter() - t0


def _interleaved(profiled, none, reps):
    """Median of profiled / mean(none before, none after) over reps."""
    ratios, before = [], none()
    for _ in range(reps):
        took = profiled()
        after = none()
        ratios.append(took / ((before + after) / 2))
        before = after
    return statistics.median(ratios)


def measure(name, backend, steps, reps, outdir):
    from third_party_workloads import BUILDERS, triton_kernel_names

    step = BUILDERS[name]()
    _steps(step, 3)  # warm-up: every kernel compiled before the sessions
    base = os.path.join(outdir, f"{name}-{backend}")
    _session(backend, base)
    _steps(step, steps)
    _finalize()
    with open(base + ".meta.json") as f:
        meta = json.load(f)
    facts = {k: v for k, v in meta.items() if k.startswith("device_timer_") and k != "device_timer_ring"}
    counter = iter(range(1 << 30))

    def one_session():
        _session(backend, os.path.join(outdir, f"{name}-one{next(counter)}"))
        took = _steps(step, steps)
        _finalize()
        return took

    def per_step():
        t0 = time.perf_counter()
        for _ in range(steps):
            _session(backend, os.path.join(outdir, f"{name}-step{next(counter)}"))
            step()
            _finalize()
        return time.perf_counter() - t0

    def none():
        return _steps(step, steps)

    result = {"kernels": kernels_by_name(base), "triton_names": sorted(triton_kernel_names()), "facts": facts,
              "one_session_ratio": _interleaved(one_session, none, reps),
              "per_step_ratio": _interleaved(per_step, none, reps)}
    if backend == "device_timer":  # last: CUPTI is loaded here only now
        names = result["triton_names"]
        stamps, cupti, _ = beside(lambda: _steps(step, steps), os.path.join(outdir, f"{name}-beside"))
        result["beside"] = compare({"kernels": stamps, "triton_names": names}, {"kernels": cupti, "triton_names": names})
    return result


def beside(work, base):
    """work() under a device_timer and an nvidia session open at once, so that each launch is
    timed by the stamps and by CUPTI: ({name: [launches, ns]} of the device timer, of CUPTI,
    what work() returned). Also dev/probe_graph_stamps.py's."""
    import flagtree.profiler as prof

    stamps = prof.start(base + "-dt", backend="device_timer")
    cupti = prof.start(base + "-nv", backend="nvidia")
    result = work()
    prof.finalize(cupti)
    prof.finalize(stamps)
    prof.release()
    return kernels_by_name(base + "-dt"), kernels_by_name(base + "-nv"), result


def run_all(backend, workloads, steps, reps):
    results = {}
    with tempfile.TemporaryDirectory() as outdir:
        for name in workloads:
            try:
                results[name] = measure(name, backend, steps, reps, outdir)
            except ImportError as error:
                results[name] = {"unavailable": f"{type(error).__name__}: {error}"}
            except Exception as error:  # one workload failing does not lose the others' figures
                results[name] = {"failed": f"{type(error).__name__}: {str(error)[:500]}"}
    return results


def compare(ours, theirs):
    """Per Triton kernel name: both counts and mean times; the totals of Triton launches."""
    names = set(ours["triton_names"]) | set(theirs["triton_names"])
    rows, seen, cupti = {}, 0, 0
    for name in sorted(names):
        mine, other = ours["kernels"].get(name), theirs["kernels"].get(name)
        if not mine and not other:
            continue
        row = {"device_timer": mine[0] if mine else 0, "cupti": other[0] if other else 0}
        if mine and other and mine[0] and other[0]:
            a, b = mine[1] / mine[0], other[1] / other[0]
            row.update(mean_ns_device_timer=round(a), mean_ns_cupti=round(b), diff_rel=(a - b) / b if b else None)
        rows[name] = row
        seen += row["device_timer"]
        cupti += row["cupti"]
    long_diffs = [abs(r["diff_rel"]) for r in rows.values() if r.get("diff_rel") is not None
                  and r["mean_ns_cupti"] >= 20_000]
    return {"per_kernel": rows, "launches_device_timer": seen, "launches_cupti": cupti,
            "names_with_equal_counts": sum(r["device_timer"] == r["cupti"] for r in rows.values()),
            "names": len(rows), "max_diff_rel_20us": max(long_diffs) if long_diffs else None}


def table(report):
    lines = ["workload     | launches dt/cupti | equal names | max diff >=20us | beside: launches, max diff >=20us"
             " | 1 session dt/nv | per step dt/nv | not timed"]
    for name, row in report["workloads"].items():
        if "agreement" not in row:
            lines.append(f"{name:12} | {row.get('device_timer') or row.get('nvidia')}")
            continue
        a, dt, nv = row["agreement"], row["device_timer"], row["nvidia"]
        diff = "-" if a["max_diff_rel_20us"] is None else f"{a['max_diff_rel_20us']:.3f}"
        b = row.get("beside") or {}
        near = "-" if b.get("max_diff_rel_20us") is None else f"{b['max_diff_rel_20us']:.3f}"
        beside = f"{b.get('launches_device_timer')}/{b.get('launches_cupti')}, {near}"
        lines.append(f"{name:12} | {a['launches_device_timer']:>7}/{a['launches_cupti']:<9} | "
                     f"{a['names_with_equal_counts']:>4}/{a['names']:<6} | {diff:>15} | {beside:>33} | "
                     f"{dt['one_session_ratio']:.3f}/{nv['one_session_ratio']:.3f}     | "
                     f"{dt['per_step_ratio']:.3f}/{nv['per_step_ratio']:.3f}    | "
                     f"{dt['facts'].get('device_timer_launches_not_timed')}")
    return "\n".join(lines)


def _nvidia_child(name, args):
    """The nvidia backend's figures for one workload, from a child process (no CUPTI here)."""
    env = {k: v for k, v in os.environ.items() if k != ARM}  # arming is the device timer's alone
    child = subprocess.run([sys.executable, os.path.abspath(__file__), "--backend", "nvidia", "--steps", str(args.steps),
                            "--reps", str(args.reps), "--workloads", name], capture_output=True, text=True, env=env)
    if child.returncode:
        sys.stderr.write(child.stderr[-3000:])
        return {"failed": f"the nvidia backend's process exited with {child.returncode}"}
    return json.loads(child.stdout.strip().splitlines()[-1])[name]


def _row(ours, other):
    if "kernels" not in ours or "kernels" not in other:
        return {"device_timer": ours, "nvidia": other}
    return {"device_timer": {k: v for k, v in ours.items() if k not in ("kernels", "triton_names", "beside")},
            "beside": ours.get("beside"),
            "nvidia": {k: v for k, v in other.items() if k not in ("kernels", "triton_names")},
            "agreement": compare(ours, other)}


def _save(report, path):
    """The report so far, replaced whole (a run cut short keeps the workloads it finished)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(report, indent=1))
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workloads", default="liger,flaggems,compile,compile_ro")
    parser.add_argument("--out")
    parser.add_argument("--backend", default=None, help=argparse.SUPPRESS)  # the child's
    args = parser.parse_args(argv)
    workloads = args.workloads.split(",")
    if args.backend:
        print(json.dumps(run_all(args.backend, workloads, args.steps, args.reps)))
        return
    report = {"machine": os.uname().nodename, "steps": args.steps, "reps": args.reps, "workloads": {}}
    path = None
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, time.strftime("launch_paths-%Y%m%d-%H%M%S.json"))
    if os.environ.get(ARM):
        # Armed at import, before any workload compiles or captures (reduce-overhead captures its
        # graphs in the warm-up): the device timer's documented way to time such graphs per kernel.
        import flagtree.profiler  # noqa: F401
    # One workload at a time, both backends, so that a run stopped by a time limit keeps what it finished.
    for name in workloads:
        other = _nvidia_child(name, args)
        report["workloads"][name] = _row(run_all("device_timer", [name], args.steps, args.reps)[name], other)
        if path:
            _save(report, path)
        sys.stderr.write(table({"workloads": {name: report["workloads"][name]}}).splitlines()[-1] + "\n")
    print(json.dumps(report, indent=1))
    print(table(report))


if __name__ == "__main__":
    main()
