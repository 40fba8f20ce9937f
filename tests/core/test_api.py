"""The public API end to end on the CPU: real Triton kernels run by Triton's interpreter,
recorded by the interpreter backend through the native core and written by the writers."""
import importlib
import os
import subprocess
import sys
import threading

import pytest

import flagtree.profiler as profiler
from support.kernels import launch_add, launch_copy, tensors
from support.profiles import find, kernel_counts, load_json, load_tree, walk
from support.threads import run_threads


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def test_start_finalize_counts_every_launch(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "p"))
    for _ in range(5):
        launch_add(x, y, out)
    profiler.finalize(sid)
    root, device_info = load_tree(tmp_path / "p.hatchet")
    assert root["frame"]["name"] == "ROOT"
    kernel = find(root, "add_kernel")
    assert kernel["metrics"]["count"] == 5
    assert kernel["metrics"]["time (ns)"] > 0
    assert kernel["metrics"]["device_type"] == 2
    assert kernel["metadata"]["grid"] == [1, 1, 1]
    assert "CPU" in device_info
    assert (out == x + y).all()


def test_profile_runs_function_and_returns_session_id(tmp_path):
    x, y, out = tensors()
    calls = []

    def work(a, b):
        calls.append((a, b))
        launch_add(x, y, out)

    sid = profiler.profile(work, name=str(tmp_path / "f"), context="python")(1, b=2)
    assert isinstance(sid, int) and sid >= 0
    assert calls == [(1, 2)]
    root, _ = load_tree(tmp_path / "f.hatchet")
    assert sum(kernel_counts(root).values()) == 1


def test_nested_scopes_and_metrics_aggregate(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "s"), context="shadow")
    for _ in range(3):
        with profiler.scope("test0", {"bytes": 1000, "flops": 2.5}):
            with profiler.scope("test1"):
                launch_add(x, y, out)
        with profiler.scope("test2"):
            launch_copy(x, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "s.hatchet")
    assert find(root, "test0")["metrics"]["bytes"] == 3000
    assert find(root, "test0")["metrics"]["flops"] == 7.5
    assert find(root, "test0", "test1", "add_kernel")["metrics"]["count"] == 3
    assert find(root, "test2", "copy_kernel")["metrics"]["count"] == 3
    assert kernel_counts(root) == {("test0", "test1", "add_kernel"): 3, ("test2", "copy_kernel"): 3}


def test_scope_decorator_and_enter_exit(tmp_path):
    x, y, out = tensors()

    @profiler.scope("decorated")
    def step():
        launch_add(x, y, out)

    profiler.start(str(tmp_path / "d"))
    step()
    step()
    profiler.enter_scope("manual", {"items": 4})
    launch_copy(x, out)
    profiler.exit_scope("manual")
    profiler.finalize()
    root, _ = load_tree(tmp_path / "d.hatchet")
    assert find(root, "decorated", "add_kernel")["metrics"]["count"] == 2
    assert find(root, "manual", "copy_kernel")["metrics"]["count"] == 1
    assert find(root, "manual")["metrics"]["items"] == 4


def test_one_scope_object_enters_many_times_and_nests_in_itself(tmp_path):
    x, y, out = tensors()
    request, metered = profiler.scope("request"), profiler.scope("metered", {"items": 2})
    profiler.start(str(tmp_path / "r"))
    for _ in range(3):
        with request:
            launch_add(x, y, out)
            with request, metered:
                launch_copy(x, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "r.hatchet")
    assert kernel_counts(root) == {("request", "add_kernel"): 3, ("request", "request", "metered", "copy_kernel"): 3}
    assert find(root, "request", "request", "metered")["metrics"]["items"] == 6


def test_a_scope_is_made_entered_and_left_by_the_native_base_with_no_python_frame():
    from flagtree.profiler import _native

    for kind in (profiler.scope, profiler.cpu_timed_scope):
        assert issubclass(kind, _native.context.Scope)
        python_defined = {name for cls in kind.__mro__[:kind.__mro__.index(_native.context.Scope)]
                          for name in ("__new__", "__init__", "__enter__", "__exit__") if name in vars(cls)}
        assert python_defined == set(), kind
    made = profiler.cpu_timed_scope("timed", {"bytes": 1})
    assert isinstance(made, profiler.scope) and made.name == "timed"
    assert type(type(made).__enter__).__name__ == "method_descriptor"


def test_a_scope_checks_its_arguments_when_made():
    with pytest.raises(TypeError, match=r"^scope name must be a string, got 3$"):
        profiler.scope(3)
    with pytest.raises(TypeError, match=r"^scope metrics must be a dict of name -> int/float, got list$"):
        profiler.scope("x", [("bytes", 1)])
    with pytest.raises(TypeError, match=r"^scope metric 'bytes' must map a name to an int or float, got True$"):
        profiler.cpu_timed_scope("x", {"bytes": True})
    assert profiler.scope(name="kw", metrics={}).name == "kw" and profiler.scope("falsy", []).name == "falsy"


def test_the_boundary_hook_runs_after_every_scope_boundary_while_set():
    from flagtree.profiler import _native

    scope_module = importlib.import_module("flagtree.profiler.scope")
    depths = []
    hook = lambda: depths.append(_native.testing.scope_depth())  # noqa: E731
    reused = profiler.scope("reused")

    @profiler.scope("decorated")
    def decorated():
        pass

    scope_module.set_boundary_hook(hook)
    try:
        with reused, profiler.cpu_timed_scope("timed", {"items": 1}):
            with reused:
                decorated()
        profiler.enter_scope("manual")
        profiler.exit_scope("manual")
    finally:
        scope_module.set_boundary_hook(None)
    assert depths == [1, 2, 3, 4, 3, 2, 1, 0, 1, 0]
    with reused:
        decorated()
    assert len(depths) == 10 and scope_module._boundary_hook is None


def test_a_decorated_function_enters_its_scope_at_each_call_and_recursion_nests(tmp_path):
    x, y, out = tensors()

    @profiler.scope("recursive")
    def recurse(depth):
        launch_add(x, y, out)
        if depth:
            recurse(depth - 1)

    profiler.start(str(tmp_path / "rec"))
    recurse(2)
    recurse(0)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "rec.hatchet")
    assert kernel_counts(root) == {("recursive", "add_kernel"): 2, ("recursive", "recursive", "add_kernel"): 1,
                                   ("recursive", "recursive", "recursive", "add_kernel"): 1}


def test_cpu_timed_scope_records_cpu_time(tmp_path):
    import time

    x, y, out = tensors()
    profiler.start(str(tmp_path / "c"))
    with profiler.cpu_timed_scope("timed"):
        time.sleep(0.02)
        launch_add(x, y, out)
    with profiler.scope("untimed"):
        launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "c.hatchet")
    assert find(root, "timed")["metrics"]["cpu_time (ns)"] >= 20_000_000
    assert "cpu_time (ns)" not in find(root, "untimed")["metrics"]


@pytest.mark.parametrize("context", ["shadow", "python"])
def test_state_is_innermost_and_sits_above_kernels(tmp_path, context):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "st"), context=context)
    with profiler.scope("test"):
        with profiler.state("state0"):
            with profiler.scope("test0"):
                launch_add(x, y, out)
            with profiler.state("inner"):
                launch_copy(x, out)
        launch_copy(x, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "st.hatchet")
    kinds = {p: n["frame"]["kind"] for p, n in walk(root)}
    counts = kernel_counts(root)
    assert sum(counts.values()) == 3
    state_paths = [p for p, k in kinds.items() if k == "state"]
    # Innermost state only, and never recursive: no state under a state.
    for path in state_paths:
        assert path[-1] in ("state0", "inner")
        assert all(kinds[path[:i]] != "state" for i in range(1, len(path)))
    add_path = next(p for p in counts if p[-1] == "add_kernel")
    assert add_path[-2] == "state0"
    copy_paths = sorted(p for p in counts if p[-1] == "copy_kernel")
    assert [p[-2] for p in copy_paths].count("inner") == 1
    if context == "shadow":
        assert add_path == ("test", "test0", "state0", "add_kernel")
        assert ("test", "inner", "copy_kernel") in counts and ("test", "copy_kernel") in counts


def test_python_context_names_file_function_and_line(tmp_path):
    x, y, out = tensors()

    def launch_site():
        launch_add(x, y, out)

    profiler.start(str(tmp_path / "py"), context="python")
    launch_site()
    profiler.finalize()
    root, _ = load_tree(tmp_path / "py.hatchet")
    (path, count), = kernel_counts(root).items()
    assert count == 1
    frames = path[:-1]
    kernels_py = os.path.join(os.path.dirname(os.path.dirname(__file__)), "support", "kernels.py")
    # Innermost frame: the launch line in kernels.launch_add; its caller: launch_site here.
    assert frames[-1].startswith(kernels_py + ":") and frames[-1].endswith("@launch_add")
    assert frames[-2].startswith(__file__ + ":") and frames[-2].endswith("@launch_site")
    line = int(frames[-2].rsplit(":", 1)[1].split("@")[0])
    with open(__file__) as source:
        assert "launch_add(x, y, out)" in source.read().splitlines()[line - 1]
    assert not any("/triton/" in f for f in frames)


def test_deactivate_excludes_exactly_the_deactivated_launches(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "a"))
    launch_add(x, y, out)
    profiler.deactivate(sid)
    for _ in range(3):
        launch_add(x, y, out)
    profiler.activate(sid)
    launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "a.hatchet")
    assert find(root, "add_kernel")["metrics"]["count"] == 2


def test_concurrent_sessions_each_receive_every_launch(tmp_path):
    x, y, out = tensors()
    a = profiler.start(str(tmp_path / "shadow"), context="shadow")
    b = profiler.start(str(tmp_path / "python"), context="python")
    c = profiler.start(str(tmp_path / "trace"), data="trace")
    with profiler.scope("s"):
        for _ in range(4):
            launch_add(x, y, out)
    profiler.finalize(b)
    launch_copy(x, out)  # after b closed: a and c only
    profiler.finalize()
    assert len({a, b, c}) == 3
    assert kernel_counts(load_tree(tmp_path / "shadow.hatchet")[0]) == {("s", "add_kernel"): 4, ("copy_kernel",): 1}
    assert sum(kernel_counts(load_tree(tmp_path / "python.hatchet")[0]).values()) == 4
    events = load_json(tmp_path / "trace.chrome_trace")["traceEvents"]
    assert sum(e.get("cat") == "kernel" for e in events) == 5


def test_threads_have_their_own_scope_stacks(tmp_path):
    profiler.start(str(tmp_path / "t"))
    # Every thread holds its scope open at once; Triton's interpreter is not thread-safe, so
    # the launches themselves take turns.
    all_inside = threading.Barrier(4)
    interpreter_lock = threading.Lock()

    def worker(i):
        x, y, out = tensors()
        with profiler.scope(f"thread{i}"):
            all_inside.wait(timeout=30)
            for _ in range(i + 1):
                with interpreter_lock:
                    launch_add(x, y, out)

    run_threads(worker, range(4))
    profiler.finalize()
    root, _ = load_tree(tmp_path / "t.hatchet")
    assert kernel_counts(root) == {(f"thread{i}", "add_kernel"): i + 1 for i in range(4)}


def test_trace_output_is_chrome_trace_with_flows_and_scopes(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "tr"), data="trace")
    with profiler.scope("outer"):
        launch_add(x, y, out)
        launch_copy(x, out)
    profiler.finalize()
    trace = load_json(tmp_path / "tr.chrome_trace")
    events = trace["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert [k["name"] for k in kernels] == ["add_kernel", "copy_kernel"]
    assert all(k["ph"] == "X" and k["dur"] > 0 and k["args"]["context"] == "outer" for k in kernels)
    # Proton's args.call_stack beside ours: ROOT, the context outermost first, the kernel
    assert [k["args"]["call_stack"] for k in kernels] == [["ROOT", "outer", "add_kernel"],
                                                          ["ROOT", "outer", "copy_kernel"]]
    scopes = [e for e in events if e.get("cat") == "scope"]
    assert [s["name"] for s in scopes] == ["outer"] and scopes[0]["pid"] == os.getpid()
    starts = [e for e in events if e["ph"] == "s"]
    finishes = [e for e in events if e["ph"] == "f"]
    assert len(starts) == len(finishes) == 2
    assert {e["id"] for e in starts} == {e["id"] for e in finishes}
    assert kernels[0]["ts"] >= scopes[0]["ts"]
    assert trace["otherData"]["backend"] == "interpreter"


def test_metadata_file_beside_output(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "m"))
    launch_add(x, y, out)
    profiler.finalize()
    meta = load_json(tmp_path / "m.meta.json")
    assert meta["backend"] == "interpreter"
    assert meta["kernel_records"] == 1 and meta["dropped_records"] == 0 and meta["lost_launches"] == 0
    assert meta["pid"] == os.getpid() and meta["stop_time_ns"] >= meta["start_time_ns"]
    assert meta["triton_version"] and meta["command_line"]


def test_llnl_hatchet_reads_the_tree(tmp_path):
    hatchet = pytest.importorskip("hatchet")
    x, y, out = tensors()
    profiler.start(str(tmp_path / "h"))
    with profiler.scope("s"):
        launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "h.hatchet")
    graph = hatchet.GraphFrame.from_literal([root])
    names = set(graph.dataframe["name"])
    assert {"ROOT", "s", "add_kernel"} <= names
    assert graph.dataframe.loc[graph.dataframe["name"] == "add_kernel", "count"].iloc[0] == 1


def test_name_with_new_directory_and_extension(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "new" / "dir" / "run.hatchet"))
    launch_add(x, y, out)
    profiler.finalize()
    assert (tmp_path / "new" / "dir" / "run.hatchet").is_file()


def test_unwritable_path_fails_at_start(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ValueError, match="cannot write the profile"):
        profiler.start(str(blocker / "p"))


@pytest.mark.parametrize("kwargs, message", [
    ({"context": "frames"}, "unknown context 'frames'; supported: shadow, python"),
    ({"data": "table"}, "unknown data 'table'; supported: tree, trace"),
    ({"hook": "torch"}, "unknown hook 'torch'; supported: triton"),
    ({"backend": "nope"}, "unknown backend 'nope'; known backends: nvidia, cupti"),
    ({"mode": "pcsampling"}, "backend 'interpreter' does not support mode 'pcsampling'"),
])
def test_bad_arguments_are_clear_errors(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        profiler.start(str(tmp_path / "bad"), **kwargs)
    assert not (tmp_path / "bad.hatchet").exists()


def test_nvidia_backend_without_gpu_says_what_is_missing(tmp_path):
    with pytest.raises(RuntimeError, match="needs the CUDA driver"):
        profiler.start(str(tmp_path / "n"), backend="nvidia")


def test_same_output_twice_is_refused(tmp_path):
    profiler.start(str(tmp_path / "same"))
    with pytest.raises(ValueError, match="already open"):
        profiler.start(str(tmp_path / "same"))


def test_too_many_sessions_is_a_clear_error(tmp_path):
    from flagtree.profiler import _native

    for i in range(_native.MAX_SESSIONS):
        profiler.start(str(tmp_path / f"s{i}"))
    with pytest.raises(RuntimeError, match="too many concurrent profiling sessions"):
        profiler.start(str(tmp_path / "one_more"))


def test_finalize_is_idempotent_and_calls_after_it_are_harmless(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "i"))
    launch_add(x, y, out)
    profiler.finalize(sid)
    first = (tmp_path / "i.hatchet").read_text()
    profiler.finalize(sid)
    profiler.finalize()
    profiler.deactivate()
    profiler.activate()
    launch_add(x, y, out)
    assert (tmp_path / "i.hatchet").read_text() == first


def test_disable_env_turns_every_call_into_a_no_op(tmp_path):
    script = (
        "import flagtree.profiler as p\n"
        "from flagtree.profiler import _native\n"
        f"sid = p.start({str(tmp_path / 'off')!r}, context='nonsense')\n"
        "once = p.scope('x')\n"
        "with once, p.cpu_timed_scope('\\ud800', {'n': 1}), once:\n    assert _native.testing.scope_depth() == 0\n"
        "p.scope('decorated')(lambda: None)()\n"
        "p.deactivate(sid); p.activate(sid); p.finalize(sid)\n"
        "print(sid)\n")
    env = dict(os.environ, FLAGTREE_PROFILER_DISABLE="1")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "-1"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("disabled, expected", [("0", "ImportError"), ("1", "no-op")])
def test_without_the_native_module_a_scope_raises_its_import_error_unless_disabled(disabled, expected):
    script = (
        "import sys\n"
        "sys.modules['flagtree.profiler._native'] = None\n"
        "import flagtree.profiler as p\n"
        "try:\n    with p.scope('x'):\n        print('no-op')\n"
        "except ImportError as e:\n    print('ImportError' if 'native module is missing' in str(e) else e)\n")
    env = dict(os.environ, FLAGTREE_PROFILER_DISABLE=disabled)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected
