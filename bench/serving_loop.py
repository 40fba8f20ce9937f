"""A serving-style loop under schedule(wait=480, warmup=0, active=20): one step is one request
through a small model (per layer a torch matmul, a Triton GELU, a torch matmul and a Triton
residual add; the host waits for each request's result), and every 500th step closes a window
of 20 recorded steps, which the writer thread writes while the loop goes on.

    python bench/serving_loop.py                        # CUDA: 300 s; CPU: TRITON_INTERPRET=1, 60 s
    python bench/serving_loop.py --duration 120 --out bench/results/serving_loop-<date>-h200.json
    python bench/serving_loop.py --backend device_timer   # the sessions on another backend

On the CPU (no GPU, or --cpu) Triton's interpreter runs the kernels and the interpreter backend
records them; a step is slow there, so the CPU defaults are a smaller model and a
window of 2 steps every 50 (the same share of recorded steps).

Two phases in this one process:
1. Interleaved (the first 3/4 of the time): rounds of blocks of --block steps each (one window's
   cycle by default), none, profiled, none, armed, none, ... (each round's configurations in a
   shuffled order); each profiled or armed block is compared with the mean of the no-profiler
   blocks on either side (slow drifts of a shared machine cancel). "profiled":
   a session with the schedule, step() every step, scope("request") around each request;
   "armed": the same session and calls, but its schedule never reaches a window
   (skip_first=2**62): a deactivated session. "trigger_windows": no session, arm() with a steps
   trigger whose ranges are the schedule's windows (each window a session of its own, opened and
   closed at step()); "trigger_armed": arm() with a range the block never reaches, the program
   armed and idle as the command's --trigger leaves it; "control": a block with no profiler in a
   configuration's place, whose ratio is the bench's own bias on the host (an A/A comparison: it
   reads 1 where the blocks' order and the ratios' statistics add nothing). Each other block
   starts its own session and finalizes it (timed apart: start_s, finalize_s), then lets go of
   CUPTI, so the none block after it runs without a profiler. Ratios: per block (median) and
   over the whole phase (sum of profiled time / sum of the adjacent none time), with a 95%
   bootstrap interval of the median, and per configuration the time Python's collector ran in
   its blocks' loops (gc).
2. Persistent (the rest): one profiled session over many windows, as a server runs it: RSS and
   device memory after its first window is written and at its end (flat: within 5%), and the
   per-part times the metadata reports (caller_ns: the caller's thread at a window's close,
   write_ns: the writer thread).
Before both, the profiler's own cost per step with no model (step_us_no_model). Prints the
result and writes it to --out (JSON).
"""
import argparse
import contextlib
import gc
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time

CUDA = "--cpu" not in sys.argv and os.environ.get("TRITON_INTERPRET") != "1"
if CUDA:
    import torch  # noqa: E402

    CUDA = torch.cuda.is_available()
if not CUDA:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: kernels run on the CPU

import torch  # noqa: E402
import triton  # noqa: E402

import flagtree.profiler as profiler  # noqa: E402
from flagtree.profiler import _native, part_writer  # noqa: E402
from flagtree.profiler.session import find_session  # noqa: E402
from flagtree.profiler.writers.atomic import write_json  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
from triton_kernels import add_kernel  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import median_ci  # noqa: E402
from workloads import _gelu as gelu_kernel  # noqa: E402  (the benches' one GELU kernel)

BLOCK = 1024
SESSION = {}  # start()'s and arm()'s options from the command line (--backend)


class Model:
    """`layers` layers of width `hidden` over a batch of `batch` rows; __call__ serves one request."""

    def __init__(self, layers, hidden, batch):
        device, dtype = ("cuda", torch.bfloat16) if CUDA else ("cpu", torch.float32)
        scale = 1 / math.sqrt(hidden)
        self.weights = [(torch.randn(hidden, hidden, device=device, dtype=dtype) * scale,
                         torch.randn(hidden, hidden, device=device, dtype=dtype) * scale) for _ in range(layers)]
        self.x = torch.randn(batch, hidden, device=device, dtype=dtype)
        self.h = torch.empty_like(self.x)
        self.n = self.x.numel()
        self.grid = (triton.cdiv(self.n, BLOCK),)

    def __call__(self):
        x = self.x
        for w1, w2 in self.weights:
            gelu_kernel[self.grid](x @ w1, self.h, self.n, BLOCK=BLOCK)
            out = torch.empty_like(x)
            add_kernel[self.grid](self.h @ w2, x, out, self.n, BLOCK=BLOCK)
            x = out
        if CUDA:
            torch.cuda.synchronize()  # the server waits for the request's result


class Cycle:
    """The schedule's window: `active` recorded steps after `wait` unrecorded ones."""

    def __init__(self, wait, active):
        self.wait, self.active, self.steps = wait, active, wait + active

    def plan(self, armed):
        return profiler.schedule(wait=self.wait, warmup=0, active=self.active, skip_first=2 ** 62 if armed else 0)

    def trigger(self, steps, armed):
        """A steps trigger over a block of `steps`: the schedule's windows as step ranges (each opens
        and closes a session of its own), or, `armed`, one range the block never reaches."""
        if armed:
            return f"steps:{2 ** 62}-{2 ** 62}"
        ranges = [(k * self.steps + self.wait, k * self.steps + self.steps - 1) for k in range(steps // self.steps)]
        return "steps:" + ",".join(f"{a}-{b}" for a, b in ranges)


class GcClock:
    """The time Python's collector ran, from gc.callbacks, and its full (generation 2)
    collections: a block that holds a full collection of this process (torch's objects) reads tens
    of ms slower, which a configuration that creates long-lived objects can bring on."""

    def __init__(self):
        self.ns, self.full, self._began = 0, 0, 0
        gc.callbacks.append(self._callback)

    def _callback(self, phase, info):
        if phase == "start":
            self._began = time.perf_counter_ns()
        else:
            self.ns += time.perf_counter_ns() - self._began
            self.full += info["generation"] == 2

    def reading(self):
        return self.ns, self.full


GC = GcClock()


def serve(model, steps, sid=None, stepping=False):
    """Serves `steps` requests; with a session (or `stepping`: an armed trigger counts steps), each
    under scope("request") and ended by step()."""
    stepping = stepping or sid is not None
    scope = profiler.scope if stepping else (lambda name: contextlib.nullcontext())
    began = time.perf_counter()
    for _ in range(steps):
        with scope("request"):
            model()
        if stepping:
            profiler.step(sid)
    return time.perf_counter() - began


class Blocks:
    """Phase 1: one block of each configuration, its start and finalize timed apart."""

    def __init__(self, model, cycle, steps, outdir):
        self.model, self.cycle, self.steps, self.outdir, self.count = model, cycle, steps, outdir, 0
        self.part_times = []
        self.trigger_windows = 0  # windows the trigger blocks opened
        self.gc = {}  # configuration -> [(collector ms, full collections) of each block's loop]

    def _served(self, config, **how):
        ns, full = GC.reading()
        loop = serve(self.model, self.steps, **how)
        self.gc.setdefault(config, []).append(((GC.ns - ns) / 1e6, GC.full - full))
        return loop

    def none(self):
        return self._served("none")

    def control(self):
        """A no-profiler block in a configuration's place: the bench's own bias (no start, no finalize)."""
        return self._served("control"), 0.0, 0.0

    def session(self, armed):
        self.count += 1
        base = os.path.join(self.outdir, f"block{self.count}")
        t0 = time.perf_counter()
        sid = profiler.start(base, schedule=self.cycle.plan(armed), **SESSION)
        t1 = time.perf_counter()
        loop = self._served("armed" if armed else "profiled", sid=sid)
        t2 = time.perf_counter()
        profiler.finalize(sid)
        t3 = time.perf_counter()
        profiler.release()  # untimed: the next none block runs without CUPTI
        if not armed:
            self.part_times += _part_times(base)
        return loop, t1 - t0, t3 - t2

    def triggered(self, armed):
        """arm() with a steps trigger (Cycle.trigger), the block, disarm(): no session between
        windows. Its start and finalize are arm() and disarm()."""
        self.count += 1
        t0 = time.perf_counter()
        run = profiler.arm(self.cycle.trigger(self.steps, armed), name=os.path.join(self.outdir, f"block{self.count}"),
                          **SESSION)
        t1 = time.perf_counter()
        loop = self._served("trigger_armed" if armed else "trigger_windows", stepping=True)
        t2 = time.perf_counter()
        profiler.disarm()
        t3 = time.perf_counter()
        profiler.release()
        self.trigger_windows += len(run.windows)
        return loop, t1 - t0, t3 - t2


def _gc_summary(rows):
    """A configuration's blocks: the collector's ms (median, total) and full collections (total)."""
    return {"ms_median": statistics.median(ms for ms, _ in rows), "ms_total": sum(ms for ms, _ in rows),
            "full_collections": sum(full for _, full in rows), "blocks": len(rows)}


def _part_times(base):
    with open(base + ".meta.json") as f:
        meta = json.load(f)
    return meta.get("part_times", [])[:-1]  # the last part is finalize's own, written in place


def interleaved(model, cycle, steps, until):
    """Phase 1 until time `until`; returns its figures."""
    with tempfile.TemporaryDirectory() as outdir:
        blocks = Blocks(model, cycle, steps, outdir)
        # (loop s, adjacent none s, start s, finalize s); the trigger's: windows opened by arm()'s
        # step ranges, and armed with none reached (the "armed but idle")
        runs = {"profiled": [], "armed": [], "trigger_windows": [], "trigger_armed": [], "control": []}
        before = blocks.none()
        nones = [before]
        # Each round in its own order (seeded: the same run is the same sequence), so that an
        # effect of a block's place after another (a release, a finalize's background write)
        # spreads over every configuration instead of biasing one.
        order, rounds = list(runs), random.Random(20261206)
        while time.perf_counter() < until or not runs["armed"]:
            rounds.shuffle(order)
            for config in order:
                if config == "control":
                    loop, start, final = blocks.control()
                elif config.startswith("trigger"):
                    loop, start, final = blocks.triggered(config == "trigger_armed")
                else:
                    loop, start, final = blocks.session(config == "armed")
                after = blocks.none()
                nones.append(after)
                runs[config].append((loop, (before + after) / 2, start, final))
                before = after
    out = {"blocks": {c: len(r) for c, r in runs.items()}, "none_step_us": _us(statistics.median(nones), steps),
           "gc": {c: _gc_summary(rows) for c, rows in blocks.gc.items()}}
    for config, rows in runs.items():
        out[config] = {
            "ratio_median": statistics.median(loop / none for loop, none, _, _ in rows),
            "ratio_median_ci95": median_ci([loop / none for loop, none, _, _ in rows]),
            "ratio_whole": sum(r[0] for r in rows) / sum(r[1] for r in rows),
            "step_us": _us(statistics.median(r[0] for r in rows), steps),
            "start_s_median": statistics.median(r[2] for r in rows),
            "finalize_s_median": statistics.median(r[3] for r in rows),
            "ratios": [round(loop / none, 4) for loop, none, _, _ in rows],  # per block, in order
        }
    out["profiled"]["windows"] = _window_times(blocks.part_times)
    out["trigger_windows"]["windows"] = blocks.trigger_windows
    return out


def _us(seconds, steps):
    return seconds / steps * 1e6


def _window_times(part_times):
    if not part_times:
        return {"count": 0}
    caller = [t["caller_ns"] / 1e6 for t in part_times]
    write = [t["write_ns"] / 1e6 for t in part_times if t["write_ns"] is not None]
    # A window closed on the writer thread (nvidia): its flush and take there, apart from the write.
    take = [t["take_ns"] / 1e6 for t in part_times if t.get("take_ns") is not None]
    return {"count": len(part_times), "caller_ms_median": statistics.median(caller), "caller_ms_max": max(caller),
            "write_ms_median": statistics.median(write) if write else None, "write_ms_max": max(write, default=None),
            "take_ms_median": statistics.median(take) if take else None, "take_ms_max": max(take, default=None),
            "caller_waited_for_room": sum(1 for t in part_times if t["queue_wait_ns"])}


def memory():
    """RSS of this process, and with CUDA the device's used memory and torch's reserved memory."""
    with open("/proc/self/statm") as f:
        facts = {"rss_bytes": int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")}
    if CUDA:
        free, total = torch.cuda.mem_get_info()
        facts["device_used_bytes"] = total - free
        facts["torch_reserved_bytes"] = torch.cuda.memory_reserved()
    return facts


def persistent(model, cycle, until, steps_per_block):
    """Phase 2: one session until time `until` (at least three windows)."""
    with tempfile.TemporaryDirectory() as outdir:
        base = os.path.join(outdir, "server")
        sid = profiler.start(base, schedule=cycle.plan(False), **SESSION)
        session = find_session(sid)
        serve(model, cycle.steps, sid)
        part_writer.wait(session.part_jobs)  # the first window written
        first = memory()
        steps, elapsed, series = cycle.steps, 0.0, []
        while time.perf_counter() < until or steps < 3 * cycle.steps:
            elapsed += serve(model, steps_per_block, sid)
            steps += steps_per_block
            if steps // steps_per_block % 20 == 0:  # how memory moves, not only where it ends (outside the timing)
                series.append(dict(memory(), steps=steps, suspensions=(_cupti_switches() or {}).get("suspensions")))
        part_writer.wait(session.part_jobs)
        end = memory()
        switches = _cupti_switches()
        profiler.finalize(sid)
        times = _part_times(base)
    growth = {k: end[k] / first[k] - 1 for k in first}
    return {"steps": steps, "step_us": elapsed / (steps - cycle.steps) * 1e6, "windows": _window_times(times),
            "cupti_switches": switches,
            "after_first_window": first, "end": end, "growth": growth, "memory_series": series,
            "flat": all(abs(g) <= 0.05 for g in growth.values())}


def _cupti_switches():
    """On CUDA: how often CUPTI went quiet between windows so far, and the last switch off (the
    device wait and the disables) and back on (the enables), ns; how often it was suspended
    (finalized after the idle time quiet) and the last suspend and re-attach, ns; None on the CPU."""
    if not CUDA:
        return None
    stats = _native.nvidia.cupti_attach_stats()
    return {key: stats[key] for key in ("quiet_switches", "last_quiet_ns", "last_wake_ns", "wake_refusals",
                                        "suspensions", "last_suspend_ns", "last_resume_ns", "resume_failures")}


def bookkeeping(cycle, steps=20_000):
    """The profiler's own per-step cost, no model: scope("request") and step(), in us, for a
    session armed and one profiled (its windows close and are handed over, nothing recorded),
    and for the program armed by a trigger that never fires."""
    out = {}
    with tempfile.TemporaryDirectory() as outdir:
        for config in ("armed", "profiled"):
            sid = profiler.start(os.path.join(outdir, config), schedule=cycle.plan(config == "armed"), **SESSION)
            out[config] = _us(serve(lambda: None, steps, sid), steps)
            profiler.finalize(sid)
        profiler.arm(cycle.trigger(steps, True), name=os.path.join(outdir, "trigger_armed"), **SESSION)
        out["trigger_armed"] = _us(serve(lambda: None, steps, stepping=True), steps)
        profiler.disarm()
    profiler.release()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=300.0 if CUDA else 60.0, help="seconds, both phases")
    # One window's cycle a block: the GPU machine's step time flips between states that last
    # seconds, so short blocks keep a block and the no-profiler blocks beside it in one state.
    parser.add_argument("--block", type=int, default=500 if CUDA else 100, help="steps of one interleaved block")
    # Triton's interpreter makes a CPU step slow: the CPU run keeps the windows' share of
    # steps (4%) in a shorter cycle.
    parser.add_argument("--wait", type=int, default=480 if CUDA else 48, help="unrecorded steps before a window")
    parser.add_argument("--active", type=int, default=20 if CUDA else 2, help="recorded steps of a window")
    parser.add_argument("--layers", type=int, default=8 if CUDA else 1)
    parser.add_argument("--hidden", type=int, default=4096 if CUDA else 64)
    parser.add_argument("--batch", type=int, default=256 if CUDA else 8)
    parser.add_argument("--cpu", action="store_true", help="run on the CPU (Triton's interpreter) even with a GPU")
    parser.add_argument("--out", help="write the result here (JSON)")
    parser.add_argument("--backend", help="the sessions' backend (default: the profiler's for the device)")
    args = parser.parse_args(argv)
    if args.backend:
        SESSION["backend"] = args.backend
    if args.block < args.wait + args.active:
        parser.error(f"--block {args.block}: a block must hold a window's cycle (--wait + --active = {args.wait + args.active})")
    model, cycle = Model(args.layers, args.hidden, args.batch), Cycle(args.wait, args.active)
    for _ in range(20):  # compile the kernels, warm cuBLAS and the allocator
        model()
    for armed in (False, True):  # the profiler's own first use (CUPTI, hooks), untimed
        with tempfile.TemporaryDirectory() as outdir:
            sid = profiler.start(os.path.join(outdir, "warm"), schedule=cycle.plan(armed), **SESSION)
            serve(model, cycle.steps, sid)
            profiler.finalize(sid)
            profiler.release()
    began = time.perf_counter()
    result = {"bench": "serving_loop", "device": torch.cuda.get_device_name() if CUDA else "cpu (TRITON_INTERPRET=1)",
              "schedule": repr(cycle.plan(False)), "args": vars(args), "step_us_no_model": bookkeeping(cycle),
              "interleaved": interleaved(model, cycle, args.block, began + 0.75 * args.duration)}
    result["persistent"] = persistent(model, cycle, began + args.duration, args.block)
    result["wall_s"] = time.perf_counter() - began
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        write_json(args.out, result, indent=1)


if __name__ == "__main__":
    main()
