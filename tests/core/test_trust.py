"""Trustworthy numbers on the CPU: graph capture/replay attribution (the native launch and record
paths driven by hand, as the CUPTI backend drives them), NVTX ranges as scopes, periodic parts
that merge back to the unsplit totals, and profiles written at interpreter exit."""
import glob
import os
import subprocess
import sys
import textwrap
import types

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.hooks import nvtx as nvtx_hook
from support.kernels import launch_add, launch_copy, tensors
from support.profiles import find, kernel_counts, load_json, load_tree

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


# ---- graphs: capture-time context carried to every replay ----

class Corr:
    """Correlation ids of our own (below the host backends' 0x80000000 range)."""

    def __init__(self, start):
        self.next = start

    def __call__(self):
        self.next += 1
        return self.next


def test_graph_replays_land_under_launch_then_capture_path(tmp_path):
    corr = Corr(1000)
    profiler.start(str(tmp_path / "g"))
    # Capture: two launches inside scopes; each creates a graph node inside its launch call.
    with profiler.scope("capture"):
        with profiler.scope("layer"):
            c1 = corr()
            _native.testing.launch(c1, False)
            _native.testing.graph_node_created(c1, 11)
        c2 = corr()
        _native.testing.launch(c2, False)
        _native.testing.graph_node_created(c2, 12)
    # Instantiation clones the nodes; replays report the clones' ids.
    _native.testing.graph_node_cloned(21, 11)
    _native.testing.graph_node_cloned(22, 12)
    with profiler.scope("replay"):
        for _ in range(100):
            g = corr()
            _native.testing.launch(g, True)
            _native.testing.record(g, "k1", 10, 20, 21)
            _native.testing.record(g, "k2", 20, 35, 22)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "g.hatchet")
    assert kernel_counts(root) == {
        ("replay", "<captured_at>", "capture", "layer", "k1"): 100,
        ("replay", "<captured_at>", "capture", "k2"): 100,
    }
    assert find(root, "replay", "<captured_at>", "capture", "k2")["metrics"]["time (ns)"] == 1500
    meta = load_json(tmp_path / "g.meta.json")
    # The captured launches ran nothing and are not counted as lost.
    assert meta["lost_launches"] == 0 and meta["unattributed_records"] == 0 and meta["kernel_records"] == 200


def test_graph_original_node_ids_resolve_too_and_states_carry(tmp_path):
    corr = Corr(5000)
    profiler.start(str(tmp_path / "o"))
    with profiler.scope("cap"), profiler.state("fwd"):
        c = corr()
        _native.testing.launch(c, False)
        _native.testing.graph_node_created(c, 31)
    g = corr()
    _native.testing.launch(g, True)
    _native.testing.record(g, "k", 0, 1, 31)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "o.hatchet")
    assert kernel_counts(root) == {("<captured_at>", "cap", "fwd", "k"): 1}


def test_graph_captured_before_the_session_is_unknown_but_counted(tmp_path):
    corr = Corr(9000)
    with profiler.scope("capture"):  # no session: nothing is remembered
        c = corr()
        _native.testing.launch(c, False)
        _native.testing.graph_node_created(c, 41)
    profiler.start(str(tmp_path / "u"), context="shadow")
    with profiler.scope("replay"):
        for _ in range(100):
            g = corr()
            _native.testing.launch(g, True)
            _native.testing.record(g, "k", 0, 2, 41)
            _native.testing.record(g, "k", 2, 4, 42)  # a node nobody reported
    profiler.finalize()
    root, _ = load_tree(tmp_path / "u.hatchet")
    assert kernel_counts(root) == {("replay", "<captured_at:unknown>", "k"): 200}


def test_graph_capture_in_one_session_is_unknown_to_a_later_one(tmp_path):
    corr = Corr(13000)
    profiler.start(str(tmp_path / "first"))
    with profiler.scope("cap"):
        c = corr()
        _native.testing.launch(c, False)
        _native.testing.graph_node_created(c, 51)
    profiler.finalize()
    profiler.start(str(tmp_path / "second"))  # may reuse the slot: the uid tells them apart
    g = corr()
    _native.testing.launch(g, True)
    _native.testing.record(g, "k", 0, 1, 51)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "second.hatchet")
    assert kernel_counts(root) == {("<captured_at:unknown>", "k"): 1}


def test_graph_replay_in_python_context_and_trace(tmp_path):
    corr = Corr(17000)
    profiler.start(str(tmp_path / "t"), data="trace")
    with profiler.scope("cap"):
        c = corr()
        _native.testing.launch(c, False)
        _native.testing.graph_node_created(c, 61)
    with profiler.scope("run"):
        g = corr()
        _native.testing.launch(g, True)
        _native.testing.record(g, "k", 0, 1, 61)
    # the records above are stamped near 0, far before their launches on the host's clock
    with pytest.warns(UserWarning, match="clock is off the host's"):
        profiler.finalize()
    events = load_json(tmp_path / "t.chrome_trace")["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert [k["args"]["context"] for k in kernels] == ["run/<captured_at>/cap"]


def test_prune_graph_launches_forgets_only_old_graph_launches(tmp_path):
    corr = Corr(21000)
    profiler.start(str(tmp_path / "pr"))
    g_old = corr()
    _native.testing.launch(g_old, True)
    cut = _native.core.monotonic_ns() + 1
    while _native.core.monotonic_ns() <= cut:
        pass
    g_new = corr()
    _native.testing.launch(g_new, True)
    assert _native.session.prune_graph_launches(cut) == 1
    with profiler.scope("late"):
        _native.testing.record(g_new, "k", 0, 1, 0)  # still known: its launch context (ROOT)
        _native.testing.record(g_old, "k", 0, 1, 0)  # forgotten: unattributed, under ROOT
    profiler.finalize()
    meta = load_json(tmp_path / "pr.meta.json")
    assert meta["kernel_records"] == 2 and meta["unattributed_records"] == 1
    root, _ = load_tree(tmp_path / "pr.hatchet")
    assert kernel_counts(root) == {("k",): 2}


# ---- NVTX ranges ----

class FakeNvtx:
    """Stands in for torch's C NVTX binding (absent from CPU builds of torch)."""

    def __init__(self):
        self.depth = 0
        self.pushed = []

    def rangePushA(self, msg):
        self.pushed.append(msg)
        self.depth += 1
        return self.depth - 1

    def rangePop(self):
        self.depth -= 1
        return self.depth

    def markA(self, msg):
        return None


@pytest.fixture
def torch_nvtx(monkeypatch):
    import torch.cuda.nvtx as nvtx

    fake = FakeNvtx()
    monkeypatch.setattr(nvtx, "_nvtx", fake)
    return nvtx, fake


def test_nvtx_ranges_become_scopes_and_are_restored(tmp_path, torch_nvtx):
    nvtx, fake = torch_nvtx
    x, y, out = tensors()
    original_push, original_pop = nvtx.range_push, nvtx.range_pop
    profiler.start(str(tmp_path / "n"))
    assert nvtx.range_push is not original_push
    assert nvtx.range_push("outer") == 0  # the original's result comes back
    with nvtx.range("inner {}", 7):
        launch_add(x, y, out)
    launch_copy(x, out)
    assert nvtx.range_pop() == 0
    launch_copy(x, out)
    profiler.finalize()
    assert nvtx.range_push is original_push and nvtx.range_pop is original_pop
    assert fake.pushed == ["outer", "inner 7"] and fake.depth == 0
    assert _native.testing.scope_depth() == 0
    root, _ = load_tree(tmp_path / "n.hatchet")
    assert kernel_counts(root) == {("outer", "inner 7", "add_kernel"): 1, ("outer", "copy_kernel"): 1,
                                   ("copy_kernel",): 1}


def test_nvtx_pop_of_a_range_pushed_before_the_session_leaves_scopes_alone(tmp_path, torch_nvtx):
    nvtx, fake = torch_nvtx
    x, y, out = tensors()
    nvtx.range_push("before")
    profiler.start(str(tmp_path / "b"))
    with profiler.scope("mine"):
        nvtx.range_pop()  # pops NVTX's range only
        launch_add(x, y, out)
    profiler.finalize()
    assert fake.depth == 0
    root, _ = load_tree(tmp_path / "b.hatchet")
    assert kernel_counts(root) == {("mine", "add_kernel"): 1}


def test_nvtx_off_by_environment(tmp_path, torch_nvtx, monkeypatch):
    nvtx, fake = torch_nvtx
    monkeypatch.setenv("FLAGTREE_PROFILER_NVTX", "0")
    x, y, out = tensors()
    original = nvtx.range_push
    profiler.start(str(tmp_path / "off"))
    assert nvtx.range_push is original
    with nvtx.range("ignored"):
        launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "off.hatchet")
    assert kernel_counts(root) == {("add_kernel",): 1}


def test_nvtx_wrapping_counts_sessions_and_per_thread_depth(tmp_path):
    import threading

    calls = []
    module = types.SimpleNamespace(range_push=lambda m: calls.append(("push", m)),
                                   range_pop=lambda: calls.append(("pop",)))
    original_push = module.range_push
    nvtx_hook.install(module)
    nvtx_hook.install(module)  # a second session: wrapped once
    try:
        depths = []

        def other_thread():
            module.range_pop()  # this thread opened nothing: no scope is left
            depths.append(_native.testing.scope_depth())

        module.range_push("a")
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert _native.testing.scope_depth() == 1 and depths == [0]
        module.range_pop()
        assert _native.testing.scope_depth() == 0
        nvtx_hook.uninstall()
        assert module.range_push is not original_push
    finally:
        nvtx_hook.uninstall()
    assert module.range_push is original_push
    assert calls == [("push", "a"), ("pop",), ("pop",)]


# ---- periodic parts ----

def _merged_totals(paths):
    from flagtree.profiler.viewer.profile_tree import load_profiles

    profile = load_profiles(list(paths))
    totals = {}
    stack = [profile.root]
    while stack:
        node = stack.pop()
        if node.is_kernel_like() or node.metrics:
            totals[tuple(node.path_names())] = {k: v for k, v in node.metrics.items()}
        stack.extend(node.children.values())
    totals.pop((), None)
    return totals


def _tree_totals(path):
    return _merged_totals([path])


def test_parts_merge_to_the_unsplit_totals(tmp_path):
    x, y, out = tensors()
    whole = profiler.start(str(tmp_path / "whole"))
    split = profiler.start(str(tmp_path / "split"))
    written = []
    for rnd in range(3):
        with profiler.scope("step", {"items": 2}):
            for _ in range(rnd + 1):
                launch_add(x, y, out)
            with profiler.cpu_timed_scope("copy"):
                launch_copy(x, out)
        written += profiler.flush_part(split)
    with profiler.scope("tail"):
        launch_add(x, y, out)
    profiler.finalize(split)
    profiler.finalize(whole)
    parts = [str(tmp_path / f"split.part{k}.hatchet") for k in (1, 2, 3, 4)]
    assert written == parts[:3]
    assert sorted(glob.glob(str(tmp_path / "split*.hatchet"))) == sorted(parts)  # no split.hatchet
    # Each part holds only what came since the previous one.
    counts = [kernel_counts(load_tree(p)[0]) for p in parts]
    assert counts == [{("step", "add_kernel"): 1, ("step", "copy", "copy_kernel"): 1},
                      {("step", "add_kernel"): 2, ("step", "copy", "copy_kernel"): 1},
                      {("step", "add_kernel"): 3, ("step", "copy", "copy_kernel"): 1},
                      {("tail", "add_kernel"): 1}]
    # Both sessions saw the same records: the merged parts equal the unsplit run exactly.
    assert _merged_totals(parts) == _tree_totals(str(tmp_path / "whole.hatchet"))
    assert _merged_totals(parts)[("step",)]["items"] == 6
    meta = load_json(tmp_path / "split.meta.json")
    assert meta["parts"] == parts and meta["kernel_records"] == 10


def test_parts_of_a_trace(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "tr"), data="trace")
    with profiler.scope("a"):
        launch_add(x, y, out)
        launch_add(x, y, out)
    (first,) = profiler.flush_part()
    launch_copy(x, out)
    profiler.finalize()
    assert first == str(tmp_path / "tr.part1.chrome_trace")
    assert not os.path.exists(tmp_path / "tr.chrome_trace")
    one = [e for e in load_json(first)["traceEvents"] if e.get("cat") in ("kernel", "scope")]
    two = [e for e in load_json(tmp_path / "tr.part2.chrome_trace")["traceEvents"]
           if e.get("cat") in ("kernel", "scope")]
    assert sorted(e["name"] for e in one) == ["a", "add_kernel", "add_kernel"]
    assert [e["name"] for e in two] == ["copy_kernel"]


def test_flush_part_errors_and_no_ops(tmp_path):
    with pytest.raises(ValueError, match="no open profiling session"):
        profiler.flush_part(12345)
    assert profiler.flush_part() == []
    assert profiler.flush_part(-1) == []


def test_periodic_parts_from_the_environment(tmp_path):
    script = tmp_path / "periodic.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {os.path.join(REPO, 'tests')!r})
        import flagtree.profiler as profiler
        from support.kernels import launch_add, tensors
        x, y, out = tensors()
        profiler.start({str(tmp_path / 'srv')!r})
        deadline = time.monotonic() + 30
        import glob
        while time.monotonic() < deadline and len(glob.glob({str(tmp_path / 'srv.part*')!r})) < 2:
            launch_add(x, y, out)
            time.sleep(0.01)
        profiler.finalize()
    """))
    env = dict(os.environ, TRITON_INTERPRET="1", FLAGTREE_PROFILER_PERIODIC_S="0.2")
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    parts = sorted(glob.glob(str(tmp_path / "srv.part*.hatchet")), key=lambda p: int(p.split("part")[-1].split(".")[0]))
    assert len(parts) >= 3 and not os.path.exists(tmp_path / "srv.hatchet")
    meta = load_json(tmp_path / "srv.meta.json")
    assert meta["parts"] == parts
    total = sum(sum(kernel_counts(load_tree(p)[0]).values()) for p in parts)
    assert total == meta["kernel_records"] > 0


def test_periodic_value_is_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_PERIODIC_S", "soon")
    with pytest.raises(ValueError, match="FLAGTREE_PROFILER_PERIODIC_S"):
        profiler.start(str(tmp_path / "bad"))
    assert profiler.session.open_sessions() == []


# ---- interpreter exit ----

def _run_script(tmp_path, body, *prefix):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(REPO, 'tests')!r})
        import flagtree.profiler as profiler
        from support.kernels import launch_add, tensors
        x, y, out = tensors()
    """) + textwrap.dedent(body))
    env = dict(os.environ, TRITON_INTERPRET="1")
    return subprocess.run([*prefix, str(script)] if prefix else [sys.executable, str(script)],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_open_session_is_written_at_interpreter_exit(tmp_path):
    run = _run_script(tmp_path, f"""
        profiler.start({str(tmp_path / 'forgot')!r})
        with profiler.scope("s"):
            for _ in range(3):
                launch_add(x, y, out)
        sys.exit(0)  # no finalize
    """)
    assert run.returncode == 0, run.stderr
    root, _ = load_tree(tmp_path / "forgot.hatchet")
    assert kernel_counts(root) == {("s", "add_kernel"): 3}
    assert load_json(tmp_path / "forgot.meta.json")["kernel_records"] == 3


def test_exit_after_finalize_writes_nothing_more(tmp_path):
    run = _run_script(tmp_path, f"""
        profiler.start({str(tmp_path / 'done')!r})
        launch_add(x, y, out)
        profiler.finalize()
        import os
        os.remove({str(tmp_path / 'done.hatchet')!r})
    """)
    assert run.returncode == 0, run.stderr
    assert not os.path.exists(tmp_path / "done.hatchet")


def test_command_line_session_wins_over_the_exit_handler(tmp_path):
    cli = (sys.executable, "-c", "import sys; from flagtree.profiler.cli import main; sys.exit(main())")
    run = _run_script(tmp_path, f"""
        profiler.start({str(tmp_path / 'ignored')!r})
        for _ in range(4):
            launch_add(x, y, out)
    """, *cli, "-n", str(tmp_path / "cmd"))
    assert run.returncode == 0, run.stderr
    root, _ = load_tree(tmp_path / "cmd.hatchet")
    assert sum(kernel_counts(root).values()) == 4
    assert not os.path.exists(tmp_path / "ignored.hatchet")
