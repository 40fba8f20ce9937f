"""A session's fixed cost (start + finalize, outputs written) on the CPU, for the device_timer
and nvidia backends, tree and trace: the real backends, session layer and writers, with only the
device stood in. device_timer: the host ring (_native.testing) and the tests' stand-in Triton
target (tests/standins/corex_triton.py), whose "device" stamps each launch's ring slot; nvidia:
the tests' libcupti stand-in (tests/standins/cupti_activity_standin.c). Each session: start,
--launches launches (a step), finalize, the same two names each time (as bench/session_cost.py);
the first session of each kind reported apart, medians of the later ones. What the stand-ins
cannot show: the GPU's drain and clock probes, and the device facts a GPU process caches (here
every session asks a driver that is not there).
With --breakdown, where start and finalize spend their time (bench/session_cost.py's wrappers),
and with --profile, a cProfile of one later session's start and finalize. With --scopes,
device_timer sessions compile kernel-side scopes in as on the H200 (the stand-in target's LLVM IR
stamps cannot take them: the backend is told they can): their compiler hook, collector and
per-session outputs, with no scoped kernel launched.

    python bench/session_cost_cpu.py [--sessions 50] [--launches 10] [--backends device_timer,nvidia] [--scopes] [--profile] [--out DIR]

Needs the native core built with -DFLAGTREE_PROFILER_TESTING=ON (dev/build_native.sh does) and a C
compiler for the stand-in library.
"""
import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def _device_timer_launcher(monkeypatch, folder, scopes=False):
    """Returns launch(): one launch of a stand-in CompiledKernel on the stand-in target, the
    ring on the host; `scopes`: kernel-side scopes compiled in as where the stamps are PTX."""
    import triton.language as tl  # deferred: after the environment is set
    from triton.compiler import ASTSource  # deferred: after the environment is set
    from triton.runtime.jit import JITFunction  # deferred: after the environment is set

    from flagtree.profiler import _native  # deferred: after the environment is set
    from flagtree.profiler.backends import get_backend  # deferred: after the environment is set
    from standins import compiled_kernels, corex_triton  # deferred: tests/ on sys.path first

    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pass

    def host_ring(slots, batch, graph_records):
        if _native.device_timer.device_timer_running():  # the ring a session before kept
            return {"offset_ns": 0, "uncertainty_ns": 0, "realtime_minus_probe_ns": 0}
        _native.testing.device_timer_host_ring(slots, batch, 0, graph_records=graph_records)
        return {"offset_ns": 0, "uncertainty_ns": 0, "realtime_minus_probe_ns": 0}

    clock = [1_000_000]
    name_id = _native.device_timer.device_timer_name_kernel("add_kernel")

    def device(slot, grid, binary):
        if slot:
            _native.testing.device_timer_host_meta(slot, name_id, grid, 256)
            _native.testing.device_timer_host_stamp(slot, 0, clock[0], clock[0] + 5_000)
        clock[0] += 50_000

    monkeypatch.setenv("TRITON_CACHE_DIR", os.path.join(folder, "triton-cache"))
    monkeypatch.setattr(get_backend("device_timer"), "start_ring", host_ring)
    if scopes:
        monkeypatch.setattr(type(get_backend("device_timer")), "scopes_unavailable", lambda self: None)
    corex_triton.install(monkeypatch, compiled_kernels.StandinDriver)
    monkeypatch.setattr(compiled_kernels.StandinDriver, "device", device)
    source = ASTSource(JITFunction(add_kernel), dict(compiled_kernels.SIGNATURE), {"BLOCK": 1024})
    kernel = compiled_kernels.compiled_kernel(os.path.join(folder, "cache"), source)
    return lambda: kernel.run(1, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None, 1, 2, 3, 4)


def _nvidia_launcher(monkeypatch, folder, scopes=False):
    """Returns launch(): one kernel launch through the libcupti stand-in."""
    import ctypes  # deferred: only this backend's run

    from flagtree.profiler.backends.nvidia.backend import NvidiaBackend  # deferred: after the environment is set
    from standins import build_standin, load_standin  # deferred: tests/ on sys.path first
    from standins.build import cuda_header_flags  # deferred: tests/ on sys.path first

    path = build_standin("cupti_activity_standin.c", folder, "libcupti.so.13",
                         extra_flags=cuda_header_flags("activity"))
    lib = load_standin(path)
    lib.standin_launch.restype = ctypes.c_uint32
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_PATH", path)
    monkeypatch.setattr(NvidiaBackend, "_driver_major", lambda self: 13)
    return lib.standin_launch


def _median_ms(values):
    return round(statistics.median(values) * 1e3, 4)


def _top(prof, n=30):
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(n)
    return [line for line in text.getvalue().splitlines() if line.strip()][-n - 1:]


def run_backend(backend, sessions, breakdown, profile, launches, scopes=False):
    import pytest  # deferred: its MonkeyPatch undoes the stand-ins

    import flagtree.profiler as profiler  # deferred: after the environment is set
    from session_cost import _Breakdown, _ours_breakdown  # deferred: bench/ on sys.path first

    folder = tempfile.mkdtemp(prefix=f"session_cost_cpu_{backend}_")
    monkeypatch = pytest.MonkeyPatch()
    launch = (_device_timer_launcher if backend == "device_timer" else _nvidia_launcher)(monkeypatch, folder, scopes)
    bd = _Breakdown()
    if breakdown:
        _ours_breakdown(bd, backend)
    result = {"backend": backend, "sessions": sessions, "launches": launches, "scopes": scopes}
    profiles = {}
    for data in ("tree", "trace"):
        rows = {"start": [], "finalize": [], "breakdown": []}
        for i in range(sessions + 1):
            base = os.path.join(folder, f"{backend}_{data}_{i % 2}")
            bd.take()
            prof = cProfile.Profile() if profile and i == sessions else None
            t0 = time.perf_counter()
            if prof:
                prof.enable()
            profiler.start(base, data=data, backend=backend)
            t1 = time.perf_counter()
            for _ in range(launches):
                launch()
            t2 = time.perf_counter()
            profiler.finalize()
            t3 = time.perf_counter()
            if prof:
                prof.disable()
                profiles[data] = _top(prof)
            if i == 0:
                result.setdefault("first_session_ms", {})[data] = round((t1 - t0 + t3 - t2) * 1e3, 3)
                bd.take()
                continue
            rows["start"].append(t1 - t0)
            rows["finalize"].append(t3 - t2)
            rows["breakdown"].append(bd.take())
        entry = {"start_ms": _median_ms(rows["start"]), "finalize_ms": _median_ms(rows["finalize"])}
        entry["fixed_ms"] = round(entry["start_ms"] + entry["finalize_ms"], 4)
        if breakdown:
            labels = sorted({k for b in rows["breakdown"] for k in b})
            entry["breakdown_ms"] = {k: _median_ms([b.get(k, 0.0) for b in rows["breakdown"]]) for k in labels}
        result[data] = entry
    profiler.release()
    monkeypatch.undo()
    return result, profiles


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--launches", type=int, default=10, help="launches per session (one step)")
    parser.add_argument("--backends", default="device_timer,nvidia")
    parser.add_argument("--no-breakdown", dest="breakdown", action="store_false")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--scopes", action="store_true", help="device_timer with kernel-side scopes compiled in")
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result, profiles = run_backend(args.child, args.sessions, args.breakdown, args.profile, args.launches,
                                       args.scopes)
        for data, lines in profiles.items():
            print(f"--- cProfile of a later {data} session's start and finalize\n" + "\n".join(lines), file=sys.stderr)
        print(json.dumps(result))
        return
    import subprocess  # deferred: only the parent runs children

    results = []
    for backend in args.backends.split(","):
        cmd = [sys.executable, __file__, "--child", backend, "--sessions", str(args.sessions),
               "--launches", str(args.launches)]
        cmd += [] if args.breakdown else ["--no-breakdown"]
        cmd += ["--profile"] if args.profile else []
        cmd += ["--scopes"] if args.scopes else []
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            results.append({"backend": backend, "error": proc.stderr.strip().splitlines()[-3:]})
        else:
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1], indent=1), flush=True)
    record = {"machine": os.uname().nodename, "cpus": os.cpu_count(), "load": os.getloadavg(),
              "command": " ".join(sys.argv), "results": results}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"session_cost_cpu-{time.strftime('%Y%m%d-%H%M%S')}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(record, f, indent=1)
        os.replace(path + ".tmp", path)
        print(path)


if __name__ == "__main__":
    main()
