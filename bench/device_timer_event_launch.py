"""The per-launch host cost of an event-timed launch (a kernel the device timer cannot stamp), in
ns, without a GPU: a launcher that does nothing, called plainly, through launch_sight's counting
wrapper, and through the event-timed wrapper (one native call: start event, the launcher, end
event, the launch's context), with a device-timer-sourced session open and the ring and its
events on the host stand-in (a mutex and a map where the CUDA device makes two cuEventRecord
calls and one stream-capture query). Drains of a full pool (every `--pairs` launches) included.

    python bench/device_timer_event_launch.py [--calls 200000] [--pairs 1024]
"""
import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("TRITON_INTERPRET", "1")


def _best(fn, args, calls, between):
    runs = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn(*args)
        runs.append((time.perf_counter_ns() - t0) / calls)
        between()
    return min(runs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--pairs", type=int, default=1024)
    args = parser.parse_args(argv)
    import flagtree.profiler as profiler  # deferred: after TRITON_INTERPRET is set
    from flagtree.profiler import _native  # deferred: after TRITON_INTERPRET is set
    from flagtree.profiler.backends.device_timer import event_timed  # deferred: after TRITON_INTERPRET is set
    from flagtree.profiler.backends.interpreter import InterpreterBackend  # deferred: after TRITON_INTERPRET is set
    from flagtree.profiler.triton_glue import launch_sight  # deferred: after TRITON_INTERPRET is set

    # The interpreter's sessions take the device timer's records, as in the CPU tests.
    InterpreterBackend.time_source_kind = "device_timer"
    timer = _native.device_timer
    _native.testing.device_timer_host_ring(1 << 16, 1 << 14, 0, graph_records=0)
    timer.device_timer_events_start(args.pairs)

    def launcher(*launch_args, **kwargs):
        return None

    counted = launch_sight.LaunchSight(lambda *decided: decided[1:]).counted(launcher, "k", "not stamped")
    timed = event_timed.EventTimed(_native).wrap(launcher, "k", "not stamped", "kernel")
    launch_args = (1, 1, 1, 0, 0x1000, None, None, None, None, 1, 2, 3, 4)  # Triton's launcher's shape
    with tempfile.TemporaryDirectory() as d:
        sid = profiler.start(os.path.join(d, "p"), backend="interpreter", context="shadow")
        best = {name: _best(fn, launch_args, args.calls, timer.device_timer_events_drain)
                for name, fn in (("plain_launcher", launcher), ("counted", counted), ("event_timed", timed))}
        stats = dict(timer.device_timer_event_stats())
        profiler.finalize(sid)
    timer.device_timer_free()
    print(json.dumps({"machine": os.uname().nodename, "calls": args.calls, "pairs": args.pairs,
                      "ns_per_launch": best, "event_timed_minus_plain_ns": best["event_timed"] - best["plain_launcher"],
                      "event_stats": stats}, indent=1))


if __name__ == "__main__":
    main()
