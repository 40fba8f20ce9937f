"""What a trigger window's close costs the thread that closes it, on the CPU: an armed program
(flagtree.profiler.arm("steps:1-1,3-3,...")) whose every other step is a window of one step with
--records host-timed kernel records (native record_host_kernel, under --scopes scopes, through the
interpreter backend); the step() that closes a window is timed on the caller's thread, the other
step() calls are not. Between windows the program idles --gap-s seconds (a serving loop's steps
between windows), so that a window's close does not wait for room behind the previous window's
writes. disarm() is timed too: it returns once every window is written.

    python bench/trigger_close_cpu.py [--windows 30] [--records 2000] [--scopes 50] [--data tree]
                                      [--gap-s 0.05] [--out DIR]

Prints one JSON report (close times in microseconds: median, p90, max; disarm's time);
--out writes it to DIR/trigger_close-<date>-<time>-cpu.json. Run it against two revisions'
sources (PYTHONPATH) to compare them.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TRITON_INTERPRET", "1")  # the interpreter backend: no GPU here


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--records", type=int, default=2000, help="kernel records per window")
    parser.add_argument("--scopes", type=int, default=50, help="distinct scopes the records fall under")
    parser.add_argument("--data", default="tree")
    parser.add_argument("--gap-s", type=float, default=0.05, help="idle time after each window's close")
    parser.add_argument("--out", help="folder for the JSON report")
    return parser.parse_args(argv)


def run(args, folder):
    import flagtree.profiler as profiler  # deferred: after TRITON_INTERPRET is set
    from flagtree.profiler import _native  # deferred: as above

    ranges = ",".join(f"{2 * k + 1}-{2 * k + 1}" for k in range(args.windows))
    profiler.arm(f"steps:{ranges}", name=os.path.join(folder, "w"), data=args.data)
    closes = []
    for step in range(2 * args.windows + 1):
        if step % 2 == 1:  # a window's one step
            for k in range(args.records):
                with profiler.scope(f"layer{k % args.scopes}"):
                    t = _native.core.monotonic_ns()
                    _native.session.record_host_kernel("k", t, t + 500, (1, 1, 1), (32, 1, 1))
        began = time.perf_counter_ns()
        written = profiler.step()
        took = time.perf_counter_ns() - began
        if written:
            closes.append(took / 1e3)
            time.sleep(args.gap_s)
    began = time.perf_counter_ns()
    profiler.disarm()
    disarm_us = (time.perf_counter_ns() - began) / 1e3
    return closes, disarm_us


def main(argv=None):
    args = parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        closes, disarm_us = run(args, folder)
        files = len(os.listdir(folder))
    first = closes[0]  # the first window's close: imports and first writes
    closes.sort()
    report = {
        "bench": "trigger_close_cpu", "python": platform.python_version(), "machine": platform.node(),
        "args": vars(args), "files": files, "windows_closed_by_step": len(closes),
        "close_us": {"median": statistics.median(closes), "p90": closes[int(0.9 * (len(closes) - 1))],
                     "max": closes[-1], "first": first},
        "disarm_us": disarm_us,
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        path = os.path.join(args.out, f"trigger_close-{time.strftime('%Y%m%d-%H%M%S')}-cpu.json")
        with open(path + ".tmp", "w") as f:
            f.write(text + "\n")
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    sys.exit(main())
