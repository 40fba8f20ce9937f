"""Cost of the native writers, on the CPU: records go in through the debug launch/record entry
points (no GPU), then one timed `session_write` puts the store on disk.

- trace: N device events (default 1,000,000) written as Chrome trace JSON; resident memory
  growth per event from before the first record to after the write (bars: <= 1 s, <= 64 B);
  median of three writes, its CPU time beside its wall time (a loaded machine stretches the latter);
- perfetto: the same events as a Perfetto protobuf trace (targets: 1/3 of the JSON's size,
  written 3x faster; measured by `compare`, as separate runs see different machine loads);
- compare: one store of N events per format, filled by the same records, written alternately
  (chrome, perfetto, chrome, ...) so that both see the same machine load; medians of the
  wall and CPU times, and the ratio within each round (`--compare-only` runs just this);
- tree: a 100,000-node tree (scopes with a kernel each) written as Hatchet JSON (bar: <= 0.2 s);
- deep: a chain of 100,000 nested scopes, written and read back by an iterative check;
- session: a 20,000-launch session from start() to the end of finalize(), tree against trace,
  interleaved (interpreter backend, host-side records; the GPU figure is the lead's round).

    python bench/writer_bench.py [--events 1000000] [--nodes 100000] [--launches 20000] [--out F]
    python bench/writer_bench.py --compare-only [--rounds 5] [--events 1000000]

The records go in through _native.testing: it needs
the native core built with -Ccmake.define.FLAGTREE_PROFILER_TESTING=ON (dev/gpu_round.sh and
dev/build_native.sh build it so).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
os.environ.setdefault("TRITON_INTERPRET", "1")  # the session part uses the interpreter backend

from flagtree.profiler import _native as native  # noqa: E402

TREE, TRACE, PERFETTO = 0, 1, 2  # data kinds as session_create numbers them
SHADOW = 0


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def record(correlation, name, start_ns):
    native.testing.launch(correlation, False)
    native.testing.record(correlation, name, start_ns, start_ns + 1000, 0)


def bench_trace(folder, events, kind=TRACE):
    before = rss_bytes()
    slot = native.session.session_create(SHADOW, kind)
    native.context.scope_enter(native.core.intern("step"))
    for i in range(events):
        record(i + 1, "kernel_a" if i % 2 else "kernel_b", 10_000 + 2_000 * i)
    native.context.scope_exit()
    path = os.path.join(folder, "t.chrome_trace" if kind == TRACE else "t.pftrace")
    walls, cpus = [], []
    for _ in range(3):  # the same store written three times: the disk is shared and noisy
        began, cpu = time.perf_counter(), time.process_time()
        written = native.dump.session_write(slot, path, other_data="{}", origin_ns=0, pid=os.getpid())
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - cpu)
        assert written == events
        size = os.path.getsize(path)
        os.unlink(path)
    growth = rss_bytes() - before
    native.session.session_remove(slot)
    seconds, cpu = statistics.median(walls), statistics.median(cpus)
    return {"events": events, "write_s": round(seconds, 4), "write_s_all": [round(w, 4) for w in walls],
            "write_cpu_s": round(cpu, 4), "rss_bytes_per_event": round(growth / events, 1),
            "file_bytes_per_event": round(size / events, 1)}


def timed_write(slot, path):
    began, cpu = time.perf_counter(), time.process_time()
    written = native.dump.session_write(slot, path, other_data="{}", origin_ns=0, pid=os.getpid())
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    size = os.path.getsize(path)
    os.unlink(path)
    return written, wall, cpu, size


def bench_compare(folder, events, rounds):
    """Chrome JSON against Perfetto protobuf on the same records, written alternately."""
    slots = {TRACE: native.session.session_create(SHADOW, TRACE),
             PERFETTO: native.session.session_create(SHADOW, PERFETTO)}
    native.context.scope_enter(native.core.intern("step"))
    for i in range(events):  # each record reaches both sessions
        record(i + 1, "kernel_a" if i % 2 else "kernel_b", 10_000 + 2_000 * i)
    native.context.scope_exit()
    runs = {TRACE: [], PERFETTO: []}
    sizes = {}
    for r in range(rounds):
        order = (TRACE, PERFETTO) if r % 2 == 0 else (PERFETTO, TRACE)  # neither always goes first
        for kind in order:
            written, wall, cpu, sizes[kind] = timed_write(slots[kind], os.path.join(folder, f"c{kind}"))
            assert written == events
            runs[kind].append((wall, cpu))
    for slot in slots.values():
        native.session.session_remove(slot)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    ratios = [c[0] / p[0] for c, p in zip(runs[TRACE], runs[PERFETTO])]
    return {"events": events, "rounds": rounds,
            "chrome_write_s": round(med[TRACE][0], 4), "perfetto_write_s": round(med[PERFETTO][0], 4),
            "chrome_cpu_s": round(med[TRACE][1], 4), "perfetto_cpu_s": round(med[PERFETTO][1], 4),
            "speedup_median_of_rounds": round(statistics.median(ratios), 2),
            "speedup_rounds": [round(x, 2) for x in ratios],
            "cpu_speedup": round(med[TRACE][1] / med[PERFETTO][1], 2),
            "chrome_bytes_per_event": round(sizes[TRACE] / events, 1),
            "perfetto_bytes_per_event": round(sizes[PERFETTO] / events, 1)}


def bench_tree(folder, nodes):
    slot = native.session.session_create(SHADOW, TREE)
    for i in range(nodes // 2):  # one scope and one kernel node each
        native.context.scope_enter(native.core.intern(f"scope_{i}"))
        record(i + 1, "kernel", 10_000 + 2_000 * i)
        native.context.scope_exit()
    path = os.path.join(folder, "t.hatchet")
    began = time.perf_counter()
    written = native.dump.session_write(slot, path, device_info="{}")
    seconds = time.perf_counter() - began
    native.session.session_remove(slot)
    return {"nodes": written, "write_s": round(seconds, 4)}


def bench_deep(folder, depth):
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from support.json_check import check_deep_chain  # the tests' iterative reader

    slot = native.session.session_create(SHADOW, TREE)
    name = native.core.intern("level")
    for _ in range(depth):
        native.context.scope_enter(name)
    record(1, "kernel", 10_000)
    for _ in range(depth):
        native.context.scope_exit()
    path = os.path.join(folder, "deep.hatchet")
    began = time.perf_counter()
    native.dump.session_write(slot, path, device_info="{}")
    seconds = time.perf_counter() - began
    native.session.session_remove(slot)
    assert check_deep_chain(path)[0] == depth + 2  # root, the scopes, the kernel
    return {"depth": depth, "write_s": round(seconds, 4)}


def one_session(folder, data, launches):
    import flagtree.profiler as profiler

    began = time.perf_counter()
    profiler.start(os.path.join(folder, f"s_{data}"), data=data, backend="interpreter")
    with profiler.scope("loop"):
        for i in range(launches):
            t = native.core.monotonic_ns()
            native.session.record_host_kernel("kernel", t, t + 1000, (1, 1, 1), (128, 1, 1))
    profiler.finalize()
    return time.perf_counter() - began


def bench_sessions(folder, launches, reps):
    times = {"tree": [], "trace": []}
    one_session(folder, "tree", 100)  # warm-up: imports, first session
    for _ in range(reps):
        for data in ("tree", "trace"):  # interleaved
            times[data].append(one_session(folder, data, launches))
    tree, trace = statistics.median(times["tree"]), statistics.median(times["trace"])
    return {"launches": launches, "reps": reps, "tree_s": round(tree, 4), "trace_s": round(trace, 4),
            "trace_over_tree": round(trace / tree, 3)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100_000)
    parser.add_argument("--launches", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5, help="chrome/perfetto rounds of the comparison")
    parser.add_argument("--compare-only", action="store_true", help="run only the chrome/perfetto comparison")
    parser.add_argument("--out", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as folder:
        if args.compare_only:
            results = {"compare": bench_compare(folder, args.events, args.rounds)}
        else:
            results = {"trace": bench_trace(folder, args.events),
                       "perfetto": bench_trace(folder, args.events, PERFETTO), "tree": bench_tree(folder, args.nodes),
                       "deep": bench_deep(folder, args.depth),
                       "session": bench_sessions(folder, args.launches, args.reps),
                       "compare": bench_compare(folder, args.events, args.rounds)}
    print(json.dumps(results))
    if args.out:
        with open(args.out, "w") as out:
            json.dump(results, out, indent=1)


if __name__ == "__main__":
    main()
