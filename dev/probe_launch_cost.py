"""Where the device_timer route's per-launch host cost goes, on the GPU machine: the driver calls
the allocator makes (ctypes timings of cuCtxGetCurrent and cuStreamIsCapturing beside a trivial
driver call), the allocator itself called from Python (no session; a deactivated session; an
active one), a 1-block kernel's launch and the serving model's step with no session, with a
deactivated device_timer session and with an active one, interleaved over rounds. Prints
nanoseconds a call, microseconds a launch or step (medians)."""
import ctypes
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_loop  # noqa: E402

profiler, torch, native = serving_loop.profiler, serving_loop.torch, serving_loop._native


def per_call_ns(fn, n=100_000):
    began = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - began) / n * 1e9


def driver_calls():
    cuda = ctypes.CDLL("libcuda.so.1")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    status, ctx, version = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_int()
    calls = {"cuDriverGetVersion": lambda: cuda.cuDriverGetVersion(ctypes.byref(version)),
             "cuCtxGetCurrent": lambda: cuda.cuCtxGetCurrent(ctypes.byref(ctx)),
             "cuStreamIsCapturing": lambda: cuda.cuStreamIsCapturing(stream, ctypes.byref(status))}
    for name, fn in calls.items():
        print(f"{name:22s} {statistics.median(per_call_ns(fn) for _ in range(3)):7.0f} ns a ctypes call")


def allocator_calls(folder):
    from triton.runtime import _allocation

    tag = native.device_timer.device_timer_layout()["align_tag"]
    stream = torch.cuda.current_stream().cuda_stream
    sid = profiler.start(os.path.join(folder, "alloc"), backend="device_timer")
    allocate = _allocation._profile_allocator.get()
    profiler.deactivate(sid)
    print(f"allocator, deactivated   {per_call_ns(lambda: allocate(16, tag, stream)):7.0f} ns a call")
    profiler.activate(sid)
    print(f"allocator, active        {per_call_ns(lambda: allocate(16, tag, stream), 3000):7.0f} ns a call")
    profiler.finalize(sid)  # the active claims ran no kernel: counted untimed
    profiler.release()


def rounds(configs, measure, folder, count=8):
    times = {c: [] for c in configs}
    for _ in range(count):
        for c in configs:
            sid = None if c == "none" else profiler.start(os.path.join(folder, c), backend="device_timer")
            if c == "deactivated":
                profiler.deactivate(sid)
            times[c].append(measure())
            if sid is not None:
                profiler.finalize(sid)
                profiler.release()
    return {c: statistics.median(t) for c, t in times.items()}


def main():
    driver_calls()
    x = torch.ones(16, device="cuda")
    out = torch.empty_like(x)
    model = serving_loop.Model(8, 4096, 256)

    def tiny(n=3000):
        began = time.perf_counter()
        for _ in range(n):
            serving_loop.add_kernel[(1,)](x, x, out, 16, BLOCK=16)
        torch.cuda.synchronize()
        return (time.perf_counter() - began) / n * 1e6

    def step(n=200):
        began = time.perf_counter()
        for _ in range(n):
            model()
        return (time.perf_counter() - began) / n * 1e6

    with tempfile.TemporaryDirectory() as folder:
        allocator_calls(folder)
        configs = ("none", "deactivated", "active")
        rounds(configs, lambda: tiny(200) + step(20), folder, 1)  # warm: compiles, the ring
        for what, measure in (("tiny launch", tiny), ("serving step", step)):
            medians = rounds(configs, measure, folder)
            print(what, " ".join(f"{c} {v:.2f} us ({v / medians['none']:.3f}x)" for c, v in medians.items()))


if __name__ == "__main__":
    main()
