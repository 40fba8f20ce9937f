"""What an armed, idle trigger (flagtree.profiler.arm()) costs a program: the same loop of steps
with the program armed and not, interleaved (ABBA blocks, so a drift of the machine falls on
both), no trigger ever firing. Each step launches --launches Triton kernels (the interpreter on
the CPU, compiled kernels with --device cuda, synchronized at the step's end) and calls
flagtree.profiler.step(); workload "python" replaces the launches by plain Python work (about
--python-us microseconds), workload "empty" by nothing: it times step() alone, so armed minus not
is what arming adds to each step() (launches cost nothing more: no hook is installed).

Armed modes: signal (signal:USR1: a handler, a watcher thread asleep on a pipe), file (file:PATH of
a file never touched: the watcher wakes every 0.5 s, step() reads the file's time at most that
often), steps (steps:A-B far beyond the run: no thread, step() counts).

    python bench/idle_cost.py [--device cpu|cuda] [--workloads kernels,python,empty] [--modes signal,file,steps]
                              [--steps 200] [--blocks 12] [--launches 16] [--python-us 1000] [--out DIR]

Prints one JSON report: per workload and mode, the median per-step time armed and not (us) and
the median over blocks of armed / not; --out writes it to DIR/idle_cost-<date>-<time>-<device>.json.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--workloads", default="kernels,python,empty")
    parser.add_argument("--modes", default="signal,file,steps")
    parser.add_argument("--steps", type=int, default=200, help="steps per timed run")
    parser.add_argument("--blocks", type=int, default=12, help="ABBA blocks (each: 2 runs armed, 2 not)")
    parser.add_argument("--launches", type=int, default=16, help="kernel launches per step")
    parser.add_argument("--python-us", type=float, default=1000.0, help="plain Python work per step, about")
    parser.add_argument("--out", help="folder for the JSON report")
    return parser.parse_args(argv)


def kernel_step(device, launches):
    import torch
    import triton

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
    from triton_kernels import add_kernel  # the examples' kernel, imported once TRITON_INTERPRET is settled

    n = 1 << 20 if device == "cuda" else 256
    x, y = torch.rand(n, device=device), torch.rand(n, device=device)
    out = torch.empty_like(x)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def work():
        for _ in range(launches):
            add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        sync()

    return work


def python_step(microseconds):
    per_loop = _calibrate()
    count = max(1, int(microseconds / per_loop))

    def work():
        total = 0
        for i in range(count):
            total += i * i
        return total

    return work


def _calibrate():
    begin = time.perf_counter()
    total = 0
    for i in range(100000):
        total += i * i
    return (time.perf_counter() - begin) * 1e6 / 100000


def timed_run(work, steps):
    import flagtree.profiler as profiler

    begin = time.perf_counter()
    for _ in range(steps):
        work()
        profiler.step()
    return (time.perf_counter() - begin) * 1e6 / steps


def armed_run(work, steps, mode, folder):
    import flagtree.profiler as profiler

    trigger = {"signal": "signal:USR1", "file": f"file:{os.path.join(folder, 'never-touched')}",
               "steps": "steps:1000000000-1000000000"}[mode]
    armed = profiler.arm(trigger, None if mode == "steps" else "seconds=1", name=os.path.join(folder, "idle"))
    try:
        return timed_run(work, steps)
    finally:
        profiler.disarm()
        assert armed.windows == [], "a trigger fired during the measurement"


def measure(work, mode, args, folder):
    """ABBA blocks of (armed, not): per-step times and the median block ratio."""
    timed_run(work, args.steps)  # warm: compiled, caches
    armed, plain, ratios = [], [], []
    for block in range(args.blocks):
        order = ("armed", "plain", "plain", "armed") if block % 2 == 0 else ("plain", "armed", "armed", "plain")
        got = {"armed": [], "plain": []}
        for which in order:
            got[which].append(armed_run(work, args.steps, mode, folder) if which == "armed"
                              else timed_run(work, args.steps))
        armed += got["armed"]
        plain += got["plain"]
        ratios.append(sum(got["armed"]) / sum(got["plain"]))
    return {"armed_us_per_step": round(statistics.median(armed), 3),
            "not_armed_us_per_step": round(statistics.median(plain), 3),
            "ratio_median": round(statistics.median(ratios), 4),
            "ratio_quartiles": [round(q, 4) for q in statistics.quantiles(ratios, n=4)],
            "blocks": args.blocks, "steps_per_run": args.steps}


def machine(device):
    facts = {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
             "loadavg_at_start": os.getloadavg(), "device": device}
    try:
        import torch
        import triton

        facts.update(torch=torch.__version__, triton=triton.__version__)
        if device == "cuda":
            facts["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return facts


def main(argv=None):
    args = parse_args(argv)
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported
    report = {"command": [sys.executable, *sys.argv], "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": machine(args.device), "launches_per_step": args.launches, "python_us": args.python_us,
              "results": {}}
    with tempfile.TemporaryDirectory() as folder:
        for workload in args.workloads.split(","):
            work = {"kernels": lambda: kernel_step(args.device, args.launches),
                    "python": lambda: python_step(args.python_us), "empty": lambda: (lambda: None)}[workload]()
            for mode in args.modes.split(","):
                report["results"][f"{workload}/{mode}"] = measure(work, mode, args, folder)
                print(workload, mode, report["results"][f"{workload}/{mode}"], file=sys.stderr, flush=True)
        leftovers = os.listdir(folder)
    report["files_written_while_armed"] = leftovers
    report["machine"]["loadavg_at_end"] = os.getloadavg()
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"idle_cost-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{args.device}.json")
        with open(path + ".tmp", "w") as handle:
            handle.write(text + "\n")
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
