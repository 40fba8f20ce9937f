"""Trustworthy numbers on a real GPU: CUDA graphs, threads on their own streams, NVTX ranges,
dropped records, a second CUPTI client (Triton's Proton), periodic parts, kernel names."""
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch

import flagtree.profiler as profiler
from support.kernels import launch_add, launch_copy, tensors
from support.profiles import find, kernel_counts, load_json, load_tree
from support.threads import run_threads

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
OURS = ("add_kernel", "copy_kernel")


@pytest.fixture(autouse=True)
def close_sessions():
    yield
    profiler.finalize()


def triton_counts(root):
    """Kernel counts of our Triton kernels only (torch may launch helpers of its own, e.g. the
    RNG seed fills of a graph replay)."""
    return {p: c for p, c in kernel_counts(root).items() if p[-1] in OURS}


def warmed(n=1024):
    x, y, out = tensors(n)
    launch_add(x, y, out)  # compile outside every session
    launch_copy(x, out)
    torch.cuda.synchronize()
    return x, y, out


# ---- 1. CUDA graphs ----

def test_graph_captured_in_session_replays_under_launch_and_capture_scopes(tmp_path):
    x, y, out = warmed()
    g = torch.cuda.CUDAGraph()
    profiler.start(str(tmp_path / "graph"))
    with profiler.scope("capture"):
        with profiler.scope("layer"):
            with torch.cuda.graph(g):
                launch_add(x, y, out)
                launch_copy(x, out)
    with profiler.scope("replay"):
        for _ in range(100):
            g.replay()
    torch.cuda.synchronize()
    profiler.finalize()
    root, _ = load_tree(tmp_path / "graph.hatchet")
    assert triton_counts(root) == {
        ("replay", "<captured_at>", "capture", "layer", "add_kernel"): 100,
        ("replay", "<captured_at>", "capture", "layer", "copy_kernel"): 100,
    }
    meta = load_json(tmp_path / "graph.meta.json")
    # The captured launches ran nothing: they are neither lost nor unattributed.
    assert meta["lost_launches"] == 0 and meta["unattributed_records"] == 0 and meta["dropped_records"] == 0


def test_graph_captured_before_the_session_is_counted_under_unknown_capture(tmp_path):
    x, y, out = warmed()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        launch_add(x, y, out)
        launch_copy(x, out)
    torch.cuda.synchronize()
    profiler.start(str(tmp_path / "before"))
    with profiler.scope("replay"):
        for _ in range(100):
            g.replay()
    torch.cuda.synchronize()
    profiler.finalize()
    root, _ = load_tree(tmp_path / "before.hatchet")
    assert triton_counts(root) == {
        ("replay", "<captured_at:unknown>", "add_kernel"): 100,
        ("replay", "<captured_at:unknown>", "copy_kernel"): 100,
    }
    meta = load_json(tmp_path / "before.meta.json")
    assert meta["lost_launches"] == 0 and meta["unattributed_records"] == 0


def test_graph_replays_in_python_context_sit_under_the_replay_line(tmp_path):
    x, y, out = warmed()
    g = torch.cuda.CUDAGraph()
    profiler.start(str(tmp_path / "pyg"), context="python")
    with torch.cuda.graph(g):
        launch_add(x, y, out)
    for _ in range(10):
        g.replay()  # the replay line
    torch.cuda.synchronize()
    profiler.finalize()
    root, _ = load_tree(tmp_path / "pyg.hatchet")
    (path, count), = triton_counts(root).items()
    assert count == 10 and path[-1] == "add_kernel"
    cut = path.index("<captured_at>")
    replay_frames = [f for f in path[:cut] if f.startswith(__file__ + ":")]
    line = int(replay_frames[-1].rsplit(":", 1)[1].split("@")[0])
    with open(__file__) as source:
        assert "# the replay line" in source.read().splitlines()[line - 1]
    assert any(f.endswith("@test_graph_replays_in_python_context_sit_under_the_replay_line")
               for f in path[cut + 1:]), "the capture-time frames follow <captured_at>"


# ---- 2. threads and streams ----

def test_eight_threads_on_own_streams_count_exactly_per_scope(tmp_path):
    inputs = [tensors(1024) for _ in range(8)]
    streams = [torch.cuda.Stream() for _ in range(8)]
    warmed()
    barrier = threading.Barrier(8)

    def worker(i):
        x, y, out = inputs[i]
        with torch.cuda.stream(streams[i]), profiler.scope(f"thread{i}"):
            barrier.wait(timeout=60)
            for _ in range(20 + i):
                with profiler.scope("step"):
                    launch_add(x, y, out)
                launch_copy(x, out)
        streams[i].synchronize()

    profiler.start(str(tmp_path / "threads8"))
    run_threads(worker, range(8))
    profiler.finalize()
    root, _ = load_tree(tmp_path / "threads8.hatchet")
    expected = {}
    for i in range(8):
        expected[(f"thread{i}", "step", "add_kernel")] = 20 + i
        expected[(f"thread{i}", "copy_kernel")] = 20 + i
    assert kernel_counts(root) == expected


def launch_on_line(i, x, y, out):
    if i == 0: launch_add(x, y, out)  # noqa: E701 (one line per thread: the line names the thread)
    elif i == 1: launch_add(x, y, out)  # noqa: E701
    elif i == 2: launch_add(x, y, out)  # noqa: E701
    elif i == 3: launch_add(x, y, out)  # noqa: E701
    elif i == 4: launch_add(x, y, out)  # noqa: E701
    elif i == 5: launch_add(x, y, out)  # noqa: E701
    elif i == 6: launch_add(x, y, out)  # noqa: E701
    elif i == 7: launch_add(x, y, out)  # noqa: E701


def test_python_context_attributes_each_kernel_to_its_own_threads_frames(tmp_path):
    inputs = [tensors(1024) for _ in range(8)]
    streams = [torch.cuda.Stream() for _ in range(8)]
    warmed()
    barrier = threading.Barrier(8)

    def python_worker(i):
        with torch.cuda.stream(streams[i]):
            barrier.wait(timeout=60)
            for _ in range(10 + i):
                launch_on_line(i, *inputs[i])
        streams[i].synchronize()

    profiler.start(str(tmp_path / "pythreads"), context="python")
    run_threads(python_worker, range(8))
    profiler.finalize()
    root, _ = load_tree(tmp_path / "pythreads.hatchet")
    first = launch_on_line.__code__.co_firstlineno
    by_line = {}
    for path, count in kernel_counts(root).items():
        assert path[-1] == "add_kernel"
        frames = [f for f in path if f.startswith(__file__ + ":")]
        assert frames[-2].endswith("@python_worker") and frames[-1].endswith("@launch_on_line"), path
        line = int(frames[-1].rsplit(":", 1)[1].split("@")[0])
        by_line[line] = by_line.get(line, 0) + count
    assert by_line == {first + 1 + i: 10 + i for i in range(8)}


# ---- 3. NVTX ranges ----

def test_nvtx_ranges_are_scopes(tmp_path):
    x, y, out = warmed()
    profiler.start(str(tmp_path / "nvtx"))
    torch.cuda.nvtx.range_push("outer")
    with torch.cuda.nvtx.range("inner"):
        launch_add(x, y, out)
    launch_copy(x, out)
    torch.cuda.nvtx.range_pop()
    launch_copy(x, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "nvtx.hatchet")
    assert kernel_counts(root) == {("outer", "inner", "add_kernel"): 1, ("outer", "copy_kernel"): 1,
                                   ("copy_kernel",): 1}


def test_nvtx_off(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_NVTX", "0")
    x, y, out = warmed()
    profiler.start(str(tmp_path / "nvtx_off"))
    with torch.cuda.nvtx.range("ignored"):
        launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "nvtx_off.hatchet")
    assert kernel_counts(root) == {("add_kernel",): 1}


# ---- 7. parts on the GPU ----

def test_parts_on_gpu_add_up(tmp_path):
    x, y, out = warmed()
    profiler.start(str(tmp_path / "p"))
    for k in range(3):
        with profiler.scope("step"):
            for _ in range(100 * (k + 1)):
                launch_add(x, y, out)
        profiler.flush_part()
    profiler.finalize()
    counts = [kernel_counts(load_tree(tmp_path / f"p.part{k}.hatchet")[0]) for k in (1, 2, 3, 4)]
    assert counts == [{("step", "add_kernel"): 100}, {("step", "add_kernel"): 200},
                      {("step", "add_kernel"): 300}, {}]
    assert not os.path.exists(tmp_path / "p.hatchet")


# ---- 8. names ----

def test_torch_kernel_keeps_demangled_and_mangled_names(tmp_path):
    a = torch.randn(1 << 20, device="cuda")
    x, y, out = warmed()
    torch.add(a, a)
    torch.cuda.synchronize()
    profiler.start(str(tmp_path / "names"))
    with profiler.scope("torch_add"):
        torch.add(a, a)
    with profiler.scope("triton_add"):
        launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "names.hatchet")
    torch_kernels = find(root, "torch_add")["children"]
    assert len(torch_kernels) == 1
    kernel = torch_kernels[0]
    assert kernel["metrics"]["count"] == 1
    assert "at::native" in kernel["frame"]["name"] and not kernel["frame"]["name"].startswith("_Z")
    assert kernel["metadata"]["mangled_name"].startswith("_Z")
    assert "mangled_name" not in find(root, "triton_add", "add_kernel")["metadata"]


# ---- in a fresh process: drops and the Proton conflict ----

def run_script(tmp_path, body, **env):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(f"""
        import json, os, sys, warnings
        sys.path.insert(0, {TESTS!r})
        import torch
        import flagtree.profiler as profiler
        from support.kernels import launch_add, launch_copy, tensors
        x, y, out = tensors(1024)
        launch_add(x, y, out)
        torch.cuda.synchronize()
    """) + textwrap.dedent(body))
    full_env = dict(os.environ, **env)
    full_env.pop("TRITON_INTERPRET", None)
    done = subprocess.run([sys.executable, str(script)], env=full_env, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


LAUNCH_AND_REPORT = """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profiler.start(os.path.join(os.getcwd(), "drops"))
        for _ in range({n}):
            launch_add(x, y, out)
        profiler.finalize()
    print(json.dumps({{"warnings": [str(w.message) for w in caught if "were lost" in str(w.message)]}}))
"""


def _drop_report(tmp_path, done):
    meta = load_json(tmp_path / "drops.meta.json")
    root, _ = load_tree(tmp_path / "drops.hatchet")
    lost_warnings = json.loads(done.stdout.strip().splitlines()[-1])["warnings"]
    return meta, sum(kernel_counts(root).values()), lost_warnings


def test_tiny_buffers_lose_nothing_silently(tmp_path):
    # A 4096-byte buffer holds ~18 kernel records: CUPTI asks for many buffers, and as long as we
    # hand one out on every request it drops nothing. Whatever happens, each launch is either
    # in the profile or counted as lost, and a loss is warned about.
    n = 5000
    done = run_script(tmp_path, LAUNCH_AND_REPORT.format(n=n), FLAGTREE_PROFILER_BUFFER_SIZE="4096")
    meta, in_tree, lost_warnings = _drop_report(tmp_path, done)
    assert in_tree == meta["kernel_records"]
    assert meta["kernel_records"] + meta["lost_launches"] == n
    assert meta["unattributed_records"] == 0
    assert bool(lost_warnings) == bool(meta["lost_launches"] or meta["dropped_records"])


def test_declined_buffers_are_counted_as_dropped_and_warned(tmp_path):
    # With FLAGTREE_PROFILER_BUFFER_LIMIT equal to one 4096-byte buffer, every request CUPTI
    # makes while it still holds a buffer is declined, and CUPTI documents that it then drops
    # records and counts them (cuptiActivityGetNumDroppedRecords). A dropped kernel record leaves
    # its launch without a record, so the launches split exactly into recorded + lost, and the
    # lost ones are the dropped ones.
    n = 20000
    done = run_script(tmp_path, LAUNCH_AND_REPORT.format(n=n), FLAGTREE_PROFILER_BUFFER_SIZE="4096",
                      FLAGTREE_PROFILER_BUFFER_LIMIT="4096")
    meta, in_tree, lost_warnings = _drop_report(tmp_path, done)
    assert meta["dropped_records"] > 0, meta
    assert lost_warnings and f"{max(meta['dropped_records'], meta['lost_launches'])} kernel records were lost" \
        in lost_warnings[0]
    assert in_tree == meta["kernel_records"]
    assert meta["kernel_records"] + meta["lost_launches"] == n
    assert meta["dropped_records"] == meta["lost_launches"], meta


def test_proton_active_then_our_start_is_a_clear_error(tmp_path):
    pytest.importorskip("triton.profiler")
    done = run_script(tmp_path, """
        import triton.profiler as proton
        proton.start(os.path.join(os.getcwd(), "proton"))
        # Use the very libcupti Proton loaded: one library, one subscriber slot.
        with open("/proc/self/maps") as maps:
            loaded = [l.split()[-1] for l in maps if "/libcupti.so" in l]
        proton_lib = [p for p in loaded if "triton" in p] or loaded
        os.environ["FLAGTREE_PROFILER_CUPTI_PATH"] = proton_lib[0]
        launch_add(x, y, out)
        try:
            profiler.start(os.path.join(os.getcwd(), "ours"))
            print("RESULT started")
        except RuntimeError as error:
            print("RESULT error", error)
        for _ in range(10):
            launch_add(x, y, out)  # the program goes on
        torch.cuda.synchronize()
        proton.finalize()
        print("RESULT done", float(out[5]) == float(x[5] + y[5]))
    """)
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert results[0].startswith("RESULT error") and "another CUPTI client" in results[0], done.stdout
    assert results[-1] == "RESULT done True"
    assert os.path.exists(tmp_path / "proton.hatchet")
    assert not os.path.exists(tmp_path / "ours.hatchet")


def test_our_session_survives_proton_starting_after_it(tmp_path):
    pytest.importorskip("triton.profiler")
    run_script(tmp_path, """
        import triton.profiler as proton
        profiler.start(os.path.join(os.getcwd(), "ours"))
        with profiler.scope("before"):
            for _ in range(50):
                launch_add(x, y, out)
        torch.cuda.synchronize()
        try:
            proton.start(os.path.join(os.getcwd(), "proton"))
            started = True
        except Exception as error:  # what Proton does is its business
            print("proton refused:", error)
            started = False
        launch_add(x, y, out)
        torch.cuda.synchronize()
        if started:
            try:
                proton.finalize()
            except Exception as error:
                print("proton finalize:", error)
        profiler.finalize()
    """)
    root, _ = load_tree(tmp_path / "ours.hatchet")
    assert find(root, "before", "add_kernel")["metrics"]["count"] == 50
    meta = load_json(tmp_path / "ours.meta.json")
    assert meta["unattributed_records"] == 0
