"""Where a session's fixed cost goes, on the GPU machine: per phase wall times and a
cProfile of start() and finalize() for backend="cupti" mode="pcsampling" (one long kernel, then
2,000 tiny launches), backend="instrumentation" (50 launches of a 16M-element add) and
backend="device_timer" (20,000 launches of bench/arg_kernels.py's 1-argument kernel).

    python3 dev/probe_fixed_costs.py [pcsampling] [instrumentation] [device_timer] [--sessions 3]
"""
import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time

profile = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def top(profile, n=18, key="cumulative"):
    """The profile's n heaviest functions by key ("cumulative" or "tottime"), times in us."""
    rows = []
    for (path, line, name), (_, calls, own, total, _) in pstats.Stats(profile).stats.items():
        rows.append((total if key == "cumulative" else own, own, total, calls, f"{os.path.basename(path)}:{line}({name})"))
    rows.sort(reverse=True)
    return "\n".join(f"{total * 1e6:10.1f} us cum {own * 1e6:10.1f} us own {calls:6d}  {where}"
                     for _, own, total, calls, where in rows[:n])


def phases(base, start, loop, finalize, profile_it):
    """Runs one session; returns its phase times (ms) and the profiles of start and finalize."""
    import torch

    torch.cuda.synchronize()
    profiles = {}
    times = {}
    for label, fn in (("start", start), ("loop", loop), ("finalize", finalize)):
        prof = cProfile.Profile() if profile_it and label != "loop" else None
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        fn()
        if label == "loop":
            torch.cuda.synchronize()
        if prof:
            prof.disable()
            profiles[label] = prof
        times[label] = (time.perf_counter() - t0) * 1e3
    with open(base + ".meta.json") as f:
        meta = json.load(f)
    return times, meta, profiles


def pcsampling(sessions, folder, buffers=((32, 16),), modes=("pcsampling",)):
    import torch

    import flagtree.profiler as profiler
    from flagtree.profiler.backends.nvidia import cupti
    from pcsampling_bench import heavy_kernel, tiny_kernel

    x = torch.rand(1 << 24, device="cuda")
    out = torch.empty_like(x)
    small = torch.zeros(128, device="cuda")
    heavy = lambda: heavy_kernel[(x.numel() // 1024,)](x, out, 200, BLOCK=1024)

    def tiny():
        for _ in range(2000):
            tiny_kernel[(1,)](small, BLOCK=128)

    heavy(), tiny(), torch.cuda.synchronize()
    for name, loop in (("heavy", heavy), ("tiny", tiny)):
        t0 = time.perf_counter()
        loop()
        torch.cuda.synchronize()
        print(f"pcsampling {name}: unprofiled loop {1e3 * (time.perf_counter() - t0):.2f} ms")
    t0 = time.perf_counter()
    cubins = cupti.loaded_triton_cubins()
    print(f"loaded_triton_cubins: {len(cubins)} cubins in {1e3 * (time.perf_counter() - t0):.2f} ms")
    runs = [(i, b, mode) for mode in modes for b in buffers for i in range(sessions)]
    for i, (hardware_mb, scratch_mb), mode in runs:
        cupti.HARDWARE_BYTES, cupti.SCRATCH_BYTES = hardware_mb << 20, scratch_mb << 20
        for name, loop in (("heavy", heavy), ("tiny", tiny)):
            base = os.path.join(folder, f"pc_{name}_{i}_{hardware_mb}_{scratch_mb}")
            times, meta, profiles = phases(base, lambda: profiler.start(base, backend="cupti", mode=mode),
                                           loop, profiler.finalize, profile_it=profile and i == sessions - 1)
            stats = {k[len("pcsampling_"):]: round(v * 1e3, 2) for k, v in meta.items()
                     if k.startswith("pcsampling_") and k.endswith("_s")}
            stats["errors"] = meta.get("pcsampling_first_error", meta.get("pcsampling_errors"))
            print(f"{mode} hw {hardware_mb} MiB scratch {scratch_mb} MiB {name} session {i}: " + " ".join(f"{k} {v:.2f}" for k, v in times.items())
                  + f" ms; native phases ms {stats}; samples {meta.get('pcsampling_total_samples')} dropped "
                  f"{meta.get('pcsampling_dropped_samples')} full {meta.get('pcsampling_hardware_buffer_full')}")
            for label, prof in profiles.items():
                print(f"--- cProfile pcsampling {name} {label}\n{top(prof)}")


def instrumentation(sessions, folder):
    import torch

    import flagtree.profiler as profiler
    from support.instrumented_kernels import add_two_scopes

    n = 1 << 24
    xs = [torch.randn(n, device="cuda") for _ in range(3)]

    def loop():
        for _ in range(50):
            add_two_scopes[(n // 1024,)](xs[0], xs[1], xs[2], n, BLOCK=1024)

    for i in range(sessions + 1):
        base = os.path.join(folder, f"ins_{i}")
        times, meta, profiles = phases(base, lambda: profiler.start(base, backend="instrumentation", mode="triton=on"),
                                       loop, profiler.finalize, profile_it=profile and i == sessions)
        print(f"instrumentation session {i}{' (compiles)' if i == 0 else ''}: "
              + " ".join(f"{k} {v:.2f}" for k, v in times.items()) + " ms; drains "
              + str(meta.get("instrumentation_drains")))
        for label, prof in profiles.items():
            print(f"--- cProfile instrumentation {label}\n{top(prof)}")


def visible_native_calls():
    """Wraps the native session, dump and device_timer functions in Python functions, so that
    cProfile shows their time (it does not see nanobind's functions); the allocator is left as it
    is (Triton calls it at every launch, and the native launcher compares it by identity)."""
    import functools

    from flagtree.profiler import _native

    for module in (_native.session, _native.dump, _native.device_timer):
        for name in dir(module):
            fn = getattr(module, name)
            if type(fn).__name__ == "nb_func" and name != "device_timer_allocate":
                wrapper = lambda *a, _fn=fn, **k: _fn(*a, **k)  # noqa: E731
                wrapper.__code__ = wrapper.__code__.replace(co_name=name)  # cProfile tells them apart by it
                setattr(module, name, functools.wraps(fn)(wrapper))


def collections_timed():
    """A list that gets the ns of each garbage collection from now on."""
    import gc

    spent, began = [], []

    def note(phase, info):
        if phase == "start":
            began.append(time.perf_counter_ns())
        elif began:
            spent.append((info["generation"], time.perf_counter_ns() - began.pop()))

    gc.callbacks.append(note)
    return spent


def device_timer(sessions, folder):
    import torch

    import flagtree.profiler as profiler
    from arg_kernels import launcher

    launch = launcher(1, torch)

    def loop():
        for _ in range(20_000):
            launch()

    visible_native_calls()
    collections = collections_timed()
    for i in range(sessions + 1):
        base = os.path.join(folder, f"dt_{i}")
        seen = len(collections)
        finalize = lambda: (collections.append(("finalize", 0)), profiler.finalize())  # noqa: E731
        times, meta, profiles = phases(base, lambda: profiler.start(base, backend="device_timer"),
                                       loop, finalize, profile_it=profile and i == sessions)
        marks = collections[seen:]
        cut = marks.index(("finalize", 0))
        in_finalize = [ns // 1000 for _, ns in marks[cut + 1:]]
        print(f"device_timer session {i}{' (compiles)' if i == 0 else ''}: "
              + " ".join(f"{k} {v:.2f}" for k, v in times.items()) + " ms; records "
              + str(meta.get("kernel_records")) + "; clock uncertainty ns "
              + str((meta.get("device_timer_clock_uncertainty_ns"), meta.get("device_timer_clock_check_uncertainty_ns")))
              + f"; collections in the loop {cut}, in finalize (us) {in_finalize}")
        for label, prof in profiles.items():
            print(f"--- cProfile device_timer {label}\n{top(prof, 30)}\n--- by own time\n{top(prof, 15, 'tottime')}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", nargs="*", default=["pcsampling", "instrumentation"])
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--buffers", default="32/16", help="hardware/scratch MiB pairs, comma-separated")
    parser.add_argument("--modes", default="pcsampling", help="PC-sampling modes, separated by ';'")
    parser.add_argument("--no-profile", dest="profile", action="store_false")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="fixed_costs_")
    global profile
    profile = args.profile
    for what in args.what:
        if what == "pcsampling":
            pairs = [tuple(int(v) for v in pair.split("/")) for pair in args.buffers.split(",")]
            pcsampling(args.sessions, folder, pairs, args.modes.split(";"))
        elif what == "device_timer":
            device_timer(args.sessions, folder)
        else:
            instrumentation(args.sessions, folder)


if __name__ == "__main__":
    main()
