"""The device_timer's per-launch host path in ns, without a GPU: Triton's profile-allocator call
into the native ring (host stand-in device), against the same loop without the call. What a
launch adds on the host besides the two driver queries of the CUDA ring (current context, stream
capture status), which the stand-in skips.

* idle: a session whose records are not the device timer's is open (a deactivated device-timer
  session costs the same): no slot is handed out;
* active: the interpreter backend's session takes the device timer's records (as the CPU tests'
  fixture has it), and each claimed slot is stamped as a kernel would stamp it, so the ring's
  worker delivers a record for every launch while the loop goes on (readbacks every 1,024).

    python bench/device_timer_claim.py [--calls 200000]
"""
import argparse
import json
import os
import tempfile
import time
import warnings

os.environ.setdefault("TRITON_INTERPRET", "1")


def per_call_ns(fn, calls):
    runs = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter_ns() - t0) / calls)
    return min(runs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args(argv)
    import flagtree.profiler as profiler
    from flagtree.profiler import _native
    from flagtree.profiler.backends.interpreter import InterpreterBackend

    timer, testing = _native.device_timer, _native.testing
    tag = timer.device_timer_layout()["align_tag"]
    allocate, stamp, meta = timer.device_timer_allocate, testing.device_timer_host_stamp, testing.device_timer_host_meta
    kernel = timer.device_timer_name_kernel("bench_kernel")
    testing.device_timer_host_ring(1 << 14, 1 << 10, 0)

    def launch(slot):  # what the kernel's blocks write into its slot
        meta(slot, kernel, (1, 1, 1), 128)
        stamp(slot, 0, 1000, 2000)

    results = {}
    with tempfile.TemporaryDirectory() as d:
        for mode in ("idle", "active"):
            if mode == "active":
                InterpreterBackend.time_source_kind = "device_timer"
            for context in ("shadow", "python"):
                sid = profiler.start(os.path.join(d, f"{mode}-{context}"), backend="interpreter", context=context)
                without = per_call_ns(lambda: launch(0), args.calls)
                with_claim = per_call_ns(lambda: launch(allocate(16, tag, 0)), args.calls)
                timer.device_timer_drain()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # idle: launches nobody took
                    profiler.finalize(sid)
                results[f"{mode}/{context}"] = {"loop_ns": without, "loop_with_claim_ns": with_claim,
                                                "claim_ns": with_claim - without}
    timer.device_timer_free()
    print(json.dumps({"machine": os.uname().nodename, "calls": args.calls, "claims": results}, indent=1))


if __name__ == "__main__":
    main()
