"""The device_timer's per-launch host path in ns, without a GPU: Triton's profile-allocator call
into the native ring (host stand-in device) with a session open, against an empty call of the
same shape. What a launch adds on the host besides the two driver queries of the CUDA ring
(current context, stream capture status), which the stand-in skips.

    python bench/device_timer_claim.py [--calls 200000]
"""
import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("TRITON_INTERPRET", "1")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args(argv)
    import flagtree.profiler as profiler
    from flagtree.profiler import _native

    tag = _native.device_timer.device_timer_layout()["align_tag"]
    allocate = _native.device_timer.device_timer_allocate
    _native.testing.device_timer_host_ring(1 << 16, 1 << 14, 0)

    def empty(size, alignment, stream):
        return 0

    results = {}
    with tempfile.TemporaryDirectory() as d:
        for context in ("shadow", "python"):
            sid = profiler.start(os.path.join(d, context), backend="interpreter", context=context)
            best = {}
            for name, fn in (("empty_python_call", empty), ("device_timer_allocate", allocate)):
                runs = []
                for _ in range(5):
                    t0 = time.perf_counter_ns()
                    for _ in range(args.calls):
                        fn(16, tag, 0)
                    runs.append((time.perf_counter_ns() - t0) / args.calls)
                best[name] = min(runs)
            _native.device_timer.device_timer_drain()
            profiler.finalize(sid)
            results[context] = {"ns_per_call": best,
                                "allocator_minus_empty_ns": best["device_timer_allocate"] - best["empty_python_call"]}
    _native.device_timer.device_timer_free()
    print(json.dumps({"machine": os.uname().nodename, "calls": args.calls, "contexts": results}, indent=1))


if __name__ == "__main__":
    main()
