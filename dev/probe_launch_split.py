"""Where an active device_timer session's extra host time per launch goes, on the GPU machine: the
5-argument kernel of bench/arg_kernels.py launched four ways, in one session, active against
deactivated in alternating blocks (as bench/device_timer.py's fine estimate):

* full      ``kernel[grid](...)``: everything a launch costs;
* dispatch  ``kernel.warmup(...)``: JITFunction.run's binding, cache key and look-up, no launch;
* grid      ``compiled[grid](...)``: the compiled kernel's own launch (its ``run`` launcher, the
            driver's launch), no JIT dispatch;
* launcher  ``compiled.run(...)`` with the arguments JITFunction.run passes: the launcher call alone;
* runner    the function ``compiled[grid]`` returns, made once; getitem: making it; stream: the
            current device and stream as it asks them; metadata: its launch_metadata call.

Active, the compiled kernel is the stamped one and its ``run`` the slot launcher; deactivated,
the plain kernel and Triton's launcher. Prints ns a call for each, and the difference.

    python3 dev/probe_launch_split.py [--pairs 40] [--block 1000]"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import arg_kernels  # noqa: E402


def ways(torch, triton):
    tensors = [torch.rand(1024, device="cuda") for _ in range(3)]
    args, n, block = tensors, 1000, 1024
    kernel = arg_kernels.five_args
    stream = triton.runtime.driver.active.get_current_stream(torch.cuda.current_stream().device.index)

    def compiled():  # the kernel JITFunction.run would launch now (plain or stamped)
        return kernel.warmup(*args, n, BLOCK=block, grid=(1,))

    def launcher_call():
        c = compiled()
        return lambda: c.run(1, 1, 1, stream, c.function, c.packed_metadata, None, None, None, *args, n, block)

    active = triton.runtime.driver.active

    def state():  # what a runner reads besides the launcher: said once per state
        c = compiled()
        knobs = triton.knobs.runtime
        print(f"  hooks enter={getattr(knobs.launch_enter_hook, 'calls', knobs.launch_enter_hook)!r:.80} "
              f"exit={getattr(knobs.launch_exit_hook, 'calls', knobs.launch_exit_hook)!r:.80} "
              f"run={type(c.run).__name__} class run={type(type(c).__dict__.get('run')).__name__}")
        return lambda: None

    def hooked_launcher_call():  # as the runner calls it: launch metadata and Triton's hook chains
        c = compiled()
        hooks = triton.knobs.runtime
        meta = c.launch_metadata((1, 1, 1), stream, *args, n, block)
        return lambda: c.run(1, 1, 1, stream, c.function, c.packed_metadata, meta, hooks.launch_enter_hook,
                             hooks.launch_exit_hook, *args, n, block)

    def allocator_call():
        from triton.runtime import _allocation
        from flagtree.profiler import _native
        allocate, tag = _allocation._profile_allocator.get(), _native.device_timer.device_timer_layout()["align_tag"]
        return lambda: allocate(16, tag, stream)

    return {"state": state, "hooked": hooked_launcher_call,
            "full": lambda: (lambda: kernel[(1,)](*args, n, BLOCK=block)),
            "dispatch": lambda: (lambda: kernel.warmup(*args, n, BLOCK=block, grid=(1,))),
            "grid": lambda: (lambda c: lambda: c[(1, 1, 1)](*args, n, block))(compiled()),
            "launcher": launcher_call,
            "runner": lambda: (lambda r: lambda: r(*args, n, block))(compiled()[(1, 1, 1)]),
            "getitem": lambda: (lambda c: lambda: c[(1, 1, 1)])(compiled()),
            "stream": lambda: (lambda: active.get_current_stream(active.get_current_device())),
            "metadata": lambda: (lambda c: lambda: c.launch_metadata((1, 1, 1), stream, *args, n, block))(compiled()),
            "allocator": allocator_call}  # last: active, its claims run no kernel (counted untimed)


def block_ns(call, count, torch):
    began = time.perf_counter_ns()
    for _ in range(count):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - began) / count


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--block", type=int, default=1000)
    args = parser.parse_args()
    import torch
    import triton
    import flagtree.profiler as profiler

    made = ways(torch, triton)
    with tempfile.TemporaryDirectory() as folder:
        sid = profiler.start(os.path.join(folder, "split"), backend="device_timer")
        results = {}
        for name, make in made.items():
            calls = {}
            try:
                for active in (False, True):  # each state's call made in that state: its own compiled kernel
                    (profiler.activate if active else profiler.deactivate)(sid)
                    calls[active] = make()
                    block_ns(calls[active], 200, torch)  # warm: the first launch's sight, compiles
            except Exception as error:  # one way this Triton does not take: the others still measured
                print(f"{name}: {type(error).__name__}: {error}"[:300])
                continue
            times = {False: [], True: []}
            for pair in range(args.pairs):
                for active in ((True, False) if pair % 2 else (False, True)):
                    (profiler.activate if active else profiler.deactivate)(sid)
                    times[active].append(block_ns(calls[active], args.block, torch))
            results[name] = (statistics.median(times[False]), statistics.median(times[True]))
        profiler.finalize(sid)
    print(f"{'':10} {'deactivated':>12} {'active':>9} {'extra':>7}  ns a call ({args.pairs} pairs of {args.block})")
    for name, (off, on) in results.items():
        print(f"{name:10} {off:12.0f} {on:9.0f} {on - off:7.0f}")


if __name__ == "__main__":
    main()
