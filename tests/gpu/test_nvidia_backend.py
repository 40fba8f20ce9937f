"""The nvidia backend on a real GPU: the spec's examples, exact counts, contexts, copies,
threads, traces, and agreement with Triton's own profiler (Proton)."""
import json
import os
import subprocess
import sys
import threading

import pytest
import torch

import flagtree.profiler as profiler
from support.kernels import launch_add, launch_copy, tensors
from support.threads import run_threads
from support.profiles import find, kernel_counts, load_json, load_tree, walk
from trace_checks import assert_kernels_follow_launches


@pytest.fixture(autouse=True)
def close_sessions():
    yield
    profiler.finalize()


def test_spec_profile_a_function(tmp_path):
    x, y, out = tensors(1024)

    def func(n):
        for _ in range(n):
            launch_add(x, y, out)

    sid = profiler.profile(func, name=str(tmp_path / "profile_name"), context="python")(7)
    assert sid >= 0
    root, device_info = load_tree(tmp_path / "profile_name.hatchet")
    assert sum(kernel_counts(root).values()) == 7
    dev = device_info["CUDA"]["0"]
    assert dev["num_sms"] > 0 and dev["arch"] and dev["memory_clock_rate"] > 0 and dev["bus_width"] > 0


def test_spec_profile_a_region_with_deactivate(tmp_path):
    x, y, out = tensors(1024)
    sid = profiler.start(name=str(tmp_path / "region"), context="python")
    for _ in range(10):
        launch_add(x, y, out)
    profiler.deactivate(sid)
    for _ in range(5):
        launch_add(x, y, out)
    profiler.activate(sid)
    for _ in range(3):
        launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "region.hatchet")
    assert sum(kernel_counts(root).values()) == 13


def test_spec_scopes_states_metrics(tmp_path):
    x, y, out = tensors(1024)
    profiler.start(name=str(tmp_path / "scopes"), context="shadow")
    with profiler.scope("test0", {"bytes": 1000}):
        with profiler.scope("test1"):
            launch_add(x, y, out)
    with profiler.scope("test2"):
        launch_add(x, y, out)
    with profiler.cpu_timed_scope("test"):
        launch_add(x, y, out)
    with profiler.scope("s"):
        with profiler.state("state0"):
            with profiler.scope("test0"):
                launch_copy(x, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "scopes.hatchet")
    assert kernel_counts(root) == {
        ("test0", "test1", "add_kernel"): 1, ("test2", "add_kernel"): 1, ("test", "add_kernel"): 1,
        ("s", "test0", "state0", "copy_kernel"): 1}
    assert find(root, "test0")["metrics"]["bytes"] == 1000
    assert find(root, "test")["metrics"]["cpu_time (ns)"] > 0
    kernel = find(root, "test2", "add_kernel")
    assert kernel["metrics"]["time (ns)"] > 0 and kernel["metrics"]["device_type"] == 1
    assert kernel["metadata"]["grid"] == [16, 1, 1] and kernel["metadata"]["block"][0] > 0  # 1024 elements, BLOCK=64


def test_many_launches_counted_exactly(tmp_path):
    x, y, out = tensors(256)
    launch_add(x, y, out)  # compile outside the session
    profiler.start(str(tmp_path / "many"))
    for _ in range(5000):
        launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "many.hatchet")
    assert kernel_counts(root) == {("add_kernel",): 5000}
    meta = load_json(tmp_path / "many.meta.json")
    assert meta["dropped_records"] == 0 and meta["lost_launches"] == 0 and meta["unattributed_records"] == 0


def test_torch_matmul_lands_under_its_scope(tmp_path):
    a = torch.randn(512, 512, device="cuda")
    torch.mm(a, a)
    torch.cuda.synchronize()
    profiler.start(str(tmp_path / "mm"))
    with profiler.scope("mm"):
        for _ in range(4):
            torch.mm(a, a)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "mm.hatchet")
    counts = kernel_counts(root)
    assert counts and all(path[0] == "mm" for path in counts)
    assert sum(counts.values()) >= 4


def test_python_context_names_the_launch_line(tmp_path):
    x, y, out = tensors(1024)
    profiler.start(str(tmp_path / "py"), context="python")
    launch_add(x, y, out)  # the launch line
    profiler.finalize()
    root, _ = load_tree(tmp_path / "py.hatchet")
    (path, count), = kernel_counts(root).items()
    assert count == 1
    mine = [f for f in path if f.startswith(__file__ + ":")]
    assert mine and mine[-1].endswith("@test_python_context_names_the_launch_line")
    line = int(mine[-1].rsplit(":", 1)[1].split("@")[0])
    with open(__file__) as source:
        assert "# the launch line" in source.read().splitlines()[line - 1]


def test_copies_and_sets_are_recorded_with_bytes(tmp_path):
    host = torch.ones(1 << 20)
    profiler.start(str(tmp_path / "copy"))
    with profiler.scope("h2d"):
        dev = host.to("cuda")
    with profiler.scope("set"):
        dev.zero_()
    with profiler.scope("d2h"):
        dev.cpu()
    profiler.finalize()
    root, _ = load_tree(tmp_path / "copy.hatchet")
    h2d = find(root, "h2d", "memcpy HtoD")
    d2h = find(root, "d2h", "memcpy DtoH")
    assert h2d["metrics"]["bytes"] == 4 << 20 and d2h["metrics"]["bytes"] == 4 << 20
    assert find(root, "set")["children"], "zero_ launches a kernel or a memset under its scope"


def test_threads_with_own_streams_and_scopes(tmp_path):
    # Inputs and streams are made (and the kernel compiled) before the session starts, so the
    # session sees only the threads' launches.
    inputs = [tensors(1024) for _ in range(4)]
    streams = [torch.cuda.Stream() for _ in range(4)]
    launch_add(*inputs[0])
    torch.cuda.synchronize()
    barrier = threading.Barrier(4)

    def worker(i):
        with torch.cuda.stream(streams[i]), profiler.scope(f"thread{i}"):
            barrier.wait(timeout=60)
            for _ in range(50 * (i + 1)):
                launch_add(*inputs[i])
        streams[i].synchronize()

    profiler.start(str(tmp_path / "threads"))
    run_threads(worker, range(4))
    profiler.finalize()
    root, _ = load_tree(tmp_path / "threads.hatchet")
    assert kernel_counts(root) == {(f"thread{i}", "add_kernel"): 50 * (i + 1) for i in range(4)}


def test_trace_on_gpu_has_stream_tracks_and_flows(tmp_path):
    x, y, out = tensors(1024)
    profiler.start(str(tmp_path / "tr"), data="trace")
    with profiler.scope("outer"):
        for _ in range(10):
            launch_add(x, y, out)
    profiler.finalize()
    events = load_json(tmp_path / "tr.chrome_trace")["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert len(kernels) == 10 and all(k["args"]["context"] == "outer" for k in kernels)
    assert all(k["dur"] > 0 for k in kernels)
    flows = [e for e in events if e["ph"] in "sf"]
    assert len(flows) == 20
    assert assert_kernels_follow_launches(events) == 10


def test_sessions_one_after_another(tmp_path):
    x, y, out = tensors(1024)
    for i in range(3):
        profiler.start(str(tmp_path / f"seq{i}"))
        launch_add(x, y, out)
        profiler.finalize()
        root, _ = load_tree(tmp_path / f"seq{i}.hatchet")
        assert kernel_counts(root) == {("add_kernel",): 1}


TORCH_PROFILER_CONFLICT = """
import sys, torch
sys.path.insert(0, {tests!r})
import flagtree.profiler as profiler
from support.kernels import launch_add, tensors
x, y, out = tensors(1024)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
    launch_add(x, y, out)
    try:
        profiler.start({base!r})
        print("started")
    except RuntimeError as error:
        print("refused:", error)
    launch_add(x, y, out)  # the program goes on
torch.cuda.synchronize()
assert torch.equal(out, x + y)
print("finished")
"""


def test_torch_profiler_holding_cupti_is_a_clear_error(tmp_path):
    # In its own process: torch's profiler keeps CUPTI's subscriber for the rest of the process
    # once it has run, so no later session of this test run could start.
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = TORCH_PROFILER_CONFLICT.format(tests=tests, base=str(tmp_path / "conflict"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "refused: flagtree.profiler: another CUPTI client" in done.stdout
    assert done.stdout.strip().endswith("finished")
    assert not (tmp_path / "conflict.hatchet").exists()


def _kernel_totals(path):
    with open(path) as f:
        root = json.load(f)[0]
    totals = {}
    for _, node in walk(root):
        m = node.get("metrics", {})
        if node["children"] or "count" not in m:
            continue
        name = node["frame"]["name"]
        count, time_ns = totals.get(name, (0, 0))
        totals[name] = (count + m["count"], time_ns + m["time (ns)"])
    return totals


def test_agrees_with_proton(tmp_path):
    pytest.importorskip("triton.profiler")
    here = os.path.dirname(__file__)
    results = {}
    for which in ("ours", "proton"):
        base = str(tmp_path / which)
        done = subprocess.run([sys.executable, os.path.join(here, "workload.py"), which, base],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        results[which] = _kernel_totals(base + ".hatchet")
    ours, proton = results["ours"], results["proton"]
    print("ours:", ours, "\nproton:", proton)
    assert {k: v[0] for k, v in ours.items()} == {k: v[0] for k, v in proton.items()}
    total_ours = sum(v[1] for v in ours.values())
    total_proton = sum(v[1] for v in proton.values())
    assert abs(total_ours - total_proton) <= 0.05 * total_proton
