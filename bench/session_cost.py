"""The fixed cost of one profiling session: start, finalize, and the whole session minus
the same work unprofiled, for ours (tree, trace), Proton, torch.profiler and CUPTI alone.

Each tool runs in its own process (one CUPTI client per process: see shared/DEVICE.md), in a
process that already uses torch and cuBLAS, interleaved with unprofiled runs of the same work
(10 tiny Triton kernels + 10 small matmuls). Medians over --sessions later sessions (the second
and later of the process: ours keeps CUPTI attached between them); the first session of each data
kind is reported apart ("first_session_ms"; "process_first" marks the one that paid CUPTI's
subscribe and activity enable). Tool "device_timer" is ours with backend="device_timer" (the
first session of its process compiles the workload's Triton kernel with the stamps). Tool "ours_idle0" is ours with FLAGTREE_PROFILER_CUPTI_IDLE_S=0
(CUPTI released at every finalize, as before the idle release). With --breakdown, ours also
reports where start and finalize spend their time (per step, medians). Ours calls
flagtree.profiler.release() at the end of its process.

    python bench/session_cost.py [--sessions 20] [--tools ours,ours_idle0,device_timer,proton,torch,cupti] [--out DIR]

Tool "cupti" is the tracer's floor (_native.testing.cupti_floor_start): it needs
the native core built with -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON (dev/gpu_round.sh and
dev/build_native.sh build it so).

With --first K it measures only the first session of a process, the one that pays CUPTI's
subscribe and activity enable: K fresh processes per tool (ours and cupti alternating), medians,
ours with its per-step breakdown and, with --profile-first, a cProfile of its start and finalize.
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


def _workload():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def tiny(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

    x = torch.zeros(1024, device="cuda")
    a = torch.randn(256, 256, device="cuda")

    def work():
        for _ in range(10):
            tiny[(1,)](x, 1024, BLOCK=1024)
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()

    work()  # compile, load cuBLAS
    return work


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


class _Breakdown:
    """Wraps named callables and sums the time spent in each during one session."""

    def __init__(self):
        self.totals = {}

    def wrap(self, owner, attr, label):
        original = getattr(owner, attr)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.totals[label] = self.totals.get(label, 0.0) + time.perf_counter() - t0

        setattr(owner, attr, timed)

    def take(self):
        out, self.totals = self.totals, {}
        return out


OURS = ("ours", "ours_idle0", "device_timer")  # our tools; device_timer: backend="device_timer" (no CUPTI)


def _ours_breakdown(breakdown, backend="nvidia"):
    import flagtree.profiler.session as session_module
    import flagtree.profiler.session_outputs as outputs_module
    from flagtree.profiler.backends import get_backend

    impl = get_backend(backend)
    own = ("start_ring", "_install", "_uninstall") if backend == "device_timer" else ()
    for attr in ("acquire", "attach_session", "flush", "session_outputs", "release", "device_info", "describe") + own:
        breakdown.wrap(impl, attr, f"backend.{attr}")
    if backend == "device_timer":  # the clock's offset at start (probed or kept) and finalize's probe
        for attr in ("start", "facts"):
            breakdown.wrap(impl.clock, attr, f"backend.clock.{attr}")
    for attr in ("check_writable", "write_outputs", "_close"):
        breakdown.wrap(session_module, attr, f"session.{attr}")
    for attr in ("write_profile", "write_metadata", "build_metadata"):
        breakdown.wrap(outputs_module, attr, f"session_outputs.{attr}")


def _session_runner(tool, data, folder):
    """(start, stop) callables for one session of `tool`."""
    if tool in OURS:
        import flagtree.profiler as profiler

        backend = "device_timer" if tool == "device_timer" else "nvidia"

        def start():
            profiler.start(os.path.join(folder, f"{tool}_{data}"), data=data, backend=backend)

        return start, profiler.finalize
    if tool == "proton":
        import triton.profiler as proton

        def start():
            proton.start(os.path.join(folder, f"proton_{data}"), data=data)

        return start, proton.finalize
    if tool == "torch":
        import torch

        state = {}

        def start():
            state["p"] = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                            torch.profiler.ProfilerActivity.CUDA])
            state["p"].__enter__()

        def stop():
            p = state.pop("p")
            p.__exit__(None, None, None)
            if data == "tree":
                p.key_averages()
            else:
                p.export_chrome_trace(os.path.join(folder, "torch_trace.json"))

        return start, stop
    if tool == "cupti":
        from flagtree.profiler import _native
        from flagtree.profiler.backends.nvidia.backend import cupti_candidates

        path = cupti_candidates(_native.nvidia.cuda_driver_version() // 1000)[0]

        def start():
            _native.testing.cupti_floor_start(path, 8 << 20, True)

        def stop():
            _native.nvidia.cupti_flush()
            _native.nvidia.cupti_release()

        return start, stop
    raise ValueError(tool)


def run_tool(tool, sessions, breakdown):
    work = _workload()
    ours = tool in OURS
    if tool == "ours_idle0":
        os.environ["FLAGTREE_PROFILER_CUPTI_IDLE_S"] = "0"
    datas = ("tree", "trace") if ours or tool in ("proton", "torch") else ("tree",)
    folder = tempfile.mkdtemp(prefix=f"session_cost_{tool}_")
    bd = _Breakdown()
    if breakdown and ours:
        _ours_breakdown(bd, "device_timer" if tool == "device_timer" else "nvidia")
    rows = {d: {"start": [], "finalize": [], "extra": [], "breakdown": []} for d in datas}
    # The baseline is the work before any session: once ours has run, CUPTI stays attached and
    # records (to discard) every kernel of the unprofiled runs too, which slows them: that cost
    # is reported apart as "plain_between_sessions_ms", and "extra" is against the clean runs.
    clean = [_timed(work) for _ in range(max(5, sessions // 2))]
    plain = []
    first = {}
    for i in range(sessions + 1):
        plain.append(_timed(work))
        for data in datas:
            start, stop = _session_runner(tool, data, folder)
            bd.take()
            t_start = _timed(start)
            t_work = _timed(work)
            t_stop = _timed(stop)
            sample = {"start": t_start, "finalize": t_stop, "whole": t_start + t_work + t_stop}
            if i == 0:
                first[data] = {k: v * 1e3 for k, v in sample.items()}
                first[data]["process_first"] = data == datas[0]
                bd.take()
                continue
            rows[data]["start"].append(t_start)
            rows[data]["finalize"].append(t_stop)
            rows[data]["extra"].append(sample["whole"] - statistics.median(clean))
            rows[data]["breakdown"].append(bd.take())
    if ours:
        import flagtree.profiler as profiler

        t0 = time.perf_counter()
        released = profiler.release()
        release_ms = (time.perf_counter() - t0) * 1e3
    ms = lambda xs: round(statistics.median(xs) * 1e3, 3)
    result = {"tool": tool, "sessions": sessions, "plain_work_ms": ms(clean),
              "plain_between_sessions_ms": ms(plain[1:])}
    if ours:
        result["release"] = {"released": released, "ms": round(release_ms, 3)}
    for data in datas:
        r = rows[data]
        entry = {"start_ms": ms(r["start"]), "finalize_ms": ms(r["finalize"]), "extra_ms": ms(r["extra"]),
                 "first_session_ms": {k: round(v, 3) if isinstance(v, float) else v for k, v in first[data].items()}}
        if r["breakdown"] and r["breakdown"][0]:
            labels = sorted({k for b in r["breakdown"] for k in b})
            entry["breakdown_ms"] = {k: ms([b.get(k, 0.0) for b in r["breakdown"]]) for k in labels}
        result[data] = entry
    return result


def first_session(tool, profile):
    """The first session of a fresh process: (start, work, finalize, whole) ms, ours' breakdown,
    and with `profile` the top of a cProfile of its start and its finalize."""
    import cProfile
    import io
    import pstats

    work = _workload()
    ours = tool == "ours"
    bd = _Breakdown()
    if ours:
        _ours_breakdown(bd)
    folder = tempfile.mkdtemp(prefix=f"session_first_{tool}_")
    start, stop = _session_runner(tool, "tree", folder)
    profiles = {}
    times = {}
    for label, fn in (("start", start), ("work", work), ("finalize", stop)):
        prof = cProfile.Profile() if profile and ours and label != "work" else None
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        fn()
        if prof:
            prof.disable()
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(25)
            profiles[label] = text.getvalue().splitlines()[-30:]
        times[label] = (time.perf_counter() - t0) * 1e3
    times["whole"] = sum(times.values())
    breakdown = {k: v * 1e3 for k, v in bd.take().items()}
    from flagtree.profiler import _native

    # The native tracer's fresh start, step by step (inside backend.acquire for ours; CUPTI
    # alone's start for "cupti", which is the same tracer's floor).
    for step, ns in _native.nvidia.cupti_attach_stats()["start_phases_ns"].items():
        breakdown[f"tracer.{step}"] = ns * 1e-6
    if ours:
        import flagtree.profiler as profiler

        profiler.release()
    return {"tool": tool, "ms": times, "breakdown_ms": breakdown, "profiles": profiles}


def first_sessions(runs, profile):
    """Medians of the first session over `runs` fresh processes per tool, ours and cupti alternating."""
    rows = {"ours": [], "cupti": []}
    for i in range(runs):
        for tool in rows:
            cmd = [sys.executable, __file__, "--child-first", tool] + (["--profile-first"] if profile and i == 0 else [])
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                print(f"{tool}: {proc.stderr.strip().splitlines()[-3:]}", file=sys.stderr)
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            for label, lines in row.pop("profiles").items():
                print(f"--- cProfile of ours' first {label}\n" + "\n".join(lines), file=sys.stderr)
            rows[tool].append(row)
    med = lambda xs: round(statistics.median(xs), 3) if xs else None
    result = {"first_session_runs": runs}
    for tool, samples in rows.items():
        entry = {k: med([r["ms"][k] for r in samples]) for k in ("start", "work", "finalize", "whole")}
        entry["whole_without_subscribe"] = med([r["ms"]["whole"] - r["breakdown_ms"].get("tracer.subscribe", 0.0)
                                                for r in samples])
        if samples:
            labels = sorted({k for r in samples for k in r["breakdown_ms"]})
            entry["breakdown_ms"] = {k: med([r["breakdown_ms"].get(k, 0.0) for r in samples]) for k in labels}
        entry["whole_each"] = [round(r["ms"]["whole"], 2) for r in samples]
        result[tool] = entry
    if rows["ours"] and rows["cupti"]:
        result["ours_minus_cupti_ms"] = round(result["ours"]["whole"] - result["cupti"]["whole"], 3)
        # cuptiSubscribe is the same call in both and moves by several ms between processes:
        # the difference without it says what ours adds with far less noise.
        result["ours_minus_cupti_without_subscribe_ms"] = round(
            result["ours"]["whole_without_subscribe"] - result["cupti"]["whole_without_subscribe"], 3)
    return result


def _save(result, folder, prefix):
    """result as OUT/<prefix>-<time>.json, written atomically."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--tools", default="ours,ours_idle0,proton,torch,cupti")
    parser.add_argument("--no-breakdown", dest="breakdown", action="store_false")
    parser.add_argument("--out", default=None)
    parser.add_argument("--first", type=int, default=0, metavar="K",
                        help="measure only first sessions, K fresh processes per tool (ours, cupti)")
    parser.add_argument("--profile-first", action="store_true")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-first", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_first:
        print(json.dumps(first_session(args.child_first, args.profile_first)))
        return
    if args.first:
        result = first_sessions(args.first, args.profile_first)
        print(json.dumps(result, indent=1))
        if args.out:
            _save(result, args.out, "session_first")
        return
    if args.child:
        print(json.dumps(run_tool(args.child, args.sessions, args.breakdown)))
        return
    results = []
    for tool in args.tools.split(","):
        proc = subprocess.run([sys.executable, __file__, "--child", tool, "--sessions", str(args.sessions)],
                              capture_output=True, text=True, timeout=600)
        # the child prints one JSON line last
        if proc.returncode != 0:
            results.append({"tool": tool, "error": proc.stderr.strip().splitlines()[-3:]})
        else:
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    if args.out:
        _save(results, args.out, "session_cost")
    print(f"{'tool':10} {'data':6} {'start':>8} {'finalize':>9} {'extra':>8} {'first':>8}  "
          "(ms; start/finalize/extra: medians of the later sessions; first: the first session's whole)")
    for r in results:
        for data in ("tree", "trace"):
            if data in r:
                e = r[data]
                print(f"{r['tool']:10} {data:6} {e['start_ms']:8.2f} {e['finalize_ms']:9.2f} {e['extra_ms']:8.2f} "
                      f"{e['first_session_ms']['whole']:8.2f}")


if __name__ == "__main__":
    main()
