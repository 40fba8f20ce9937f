"""The device_timer route armed with no session (arm_device_timer(), FLAGTREE_PROFILER_DEVICE_TIMER_ARM):
installed at once and idle (Triton's knobs as before the route) until a session is active; a graph
captured while armed gets its label and descriptors, and a session opened later times its replays
under the replay context; sessions open and close without taking the route down; disarming does.
A real DeviceTimerBackend on the stand-in target with the ring on the host (test_launch_sight.py),
given the graph path of the PTX stamps (the stand-in's LLVM IR stamps have none), and a class
wrapped as torch.cuda.CUDAGraph is (test_graph_replays.py's HostGraph)."""
import dataclasses
import json
import os
import subprocess
import sys

import pytest
from triton.compiler.compiler import CompiledKernel

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from flagtree.profiler.backends.device_timer import armed, compiler_hook, graph_replays, route
from flagtree.profiler.triton_glue import kernels as triton_kernels, stages
from support.profiles import metrics_by_path
from test_graph_replays import HostGraph
from test_launch_sight import device  # noqa: F401 (fixture)

DT = _native.device_timer
PLAIN = (None, "")
TRITONS_RUN = CompiledKernel.__dict__["run"]
UNKNOWN = "<captured_at:unknown>"


class KnobGraph(HostGraph):
    """A HostGraph that keeps the compiler knobs its capture ran with."""

    def capture_begin(self, *args, **kwargs):
        self.knobs_in_capture = stages.compiler_knobs()
        super().capture_begin(*args, **kwargs)


@pytest.fixture
def backend(device, monkeypatch):
    """The device_timer backend on the stand-in target, with a graph path, Triton's knobs plain
    before it; disarmed after the test."""
    saved = stages.compiler_knobs()
    stages.set_compiler_knobs(PLAIN)
    found = route.route_support

    def with_graphs(target=None):
        support = found(target)
        return dataclasses.replace(support, stamper=dataclasses.replace(support.stamper, times_graph_replays=True))

    monkeypatch.setattr(route, "route_support", with_graphs)
    impl = get_backend("device_timer")
    yield impl
    impl.disarm()
    graph_replays.uninstall()
    stages.set_compiler_knobs(saved)


@pytest.fixture
def graph_cls(monkeypatch):
    """KnobGraph as torch.cuda.CUDAGraph for the backend (the class the wrapper finds)."""
    cls = type("Graph", (KnobGraph,), {})
    monkeypatch.setattr(graph_replays, "graph_class", lambda: cls)
    monkeypatch.setattr(graph_replays, "_stream_of", lambda graph: graph.stream)
    return cls


def _meta(tmp_path, name="p"):
    return json.load(open(tmp_path / f"{name}.meta.json"))


def test_a_graph_captured_while_armed_is_timed_at_its_replays_in_a_later_session(tmp_path, backend, graph_cls):
    assert profiler.arm_device_timer() is True
    assert graph_cls in graph_replays.installed()  # wrapped at arm time: torch's class was there
    assert stages.compiler_knobs() == PLAIN  # armed and idle: the knobs of no profiler
    graph = graph_cls([("k1", 100), ("k2", 150)])
    graph.capture()
    assert graph.knobs_in_capture[1].startswith(compiler_hook.MODE_PREFIX)  # set for the capture's length
    assert stages.compiler_knobs() == PLAIN
    label = getattr(graph, graph_replays.LABEL)
    assert label and DT.device_timer_graph_nodes(label) == 2  # descriptors, though no session was open
    graph.replay()  # before any session: noted, nobody's
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    assert stages.compiler_knobs()[1].startswith(compiler_hook.MODE_PREFIX)
    with profiler.scope("replays"):
        for _ in range(10):
            graph.replay()
    profiler.finalize(sid)
    tree = metrics_by_path(tmp_path / "p.hatchet")
    for name, duration in (("k1", 100), ("k2", 150)):
        node = tree[("replays", UNKNOWN, name)]  # no session saw the capture: its context is unknown
        assert (node["count"], node["time (ns)"]) == (10, 10 * duration)
    meta = _meta(tmp_path)
    assert meta["device_timer_armed"] is True and meta["device_timer_armed_by"] == "arm_device_timer()"
    assert meta["device_timer_armed_mode"] == meta["device_timer_options"] and meta["device_timer_armed_at"]
    assert meta["device_timer_graph_replays_matched"] == 20 and meta["device_timer_graph_replays_unlisted"] == 0


def test_sessions_open_and_close_without_taking_the_armed_route_down(tmp_path, backend, graph_cls):
    profiler.arm_device_timer()
    assert profiler.arm_device_timer() is False  # armed already, same mode
    ours = DT.device_timer_allocate
    assert triton_kernels.profile_allocator() is ours and DT.device_timer_running()
    for name in ("a", "b"):
        sid = profiler.start(str(tmp_path / name), backend="device_timer")
        profiler.finalize(sid)
        # the route stays, paused again: plain knobs and Triton's own CompiledKernel.run
        assert triton_kernels.profile_allocator() is ours and DT.device_timer_running()
        assert stages.compiler_knobs() == PLAIN and CompiledKernel.__dict__["run"] is TRITONS_RUN
    assert _meta(tmp_path, "b")["device_timer_armed"] is True
    assert profiler.disarm_device_timer() is True and profiler.disarm_device_timer() is False
    # taken down: the ring goes; the allocator stays for kernels stamped meanwhile (null slots)
    assert triton_kernels.profile_allocator() is ours and not DT.device_timer_running()
    assert ours(16, DT.device_timer_layout()["align_tag"], 0) == 0
    assert graph_cls not in graph_replays.installed()
    sid = profiler.start(str(tmp_path / "after"), backend="device_timer")  # a plain session again
    profiler.finalize(sid)
    assert _meta(tmp_path, "after")["device_timer_armed"] is False
    # taken down with its session (the ring kept for the next one, the allocator for stamped kernels)
    assert triton_kernels.profile_allocator() is ours and not compiler_hook.installed()


def test_a_session_with_another_mode_says_the_route_is_armed(tmp_path, backend, graph_cls):
    profiler.arm_device_timer("slots=1024")
    with pytest.raises(ValueError, match=r"the route is armed with mode 'slots=1024"):
        profiler.start(str(tmp_path / "p"), backend="device_timer", mode="slots=2048")
    with pytest.raises(ValueError, match=r"armed with mode 'slots=1024"):
        profiler.arm_device_timer("slots=2048")
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode="slots=1024")
    profiler.finalize(sid)


def test_a_session_open_before_arming_with_another_mode_refuses_the_arm(tmp_path, backend, graph_cls):
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode="slots=1024")
    with pytest.raises(ValueError, match=r"a session with mode 'slots=1024"):
        profiler.arm_device_timer("slots=2048")
    assert backend.armed is None
    profiler.finalize(sid)


def test_disarmed_while_a_session_is_open_the_route_goes_with_the_session(tmp_path, backend, graph_cls):
    profiler.arm_device_timer()
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    assert profiler.disarm_device_timer() is True
    assert DT.device_timer_running()  # the session holds the route
    profiler.finalize(sid)
    assert not compiler_hook.installed() and CompiledKernel.__dict__["run"] is TRITONS_RUN


def _graphs_module(tmp_path, monkeypatch, name):
    """A module standing in for torch.cuda.graphs, not yet imported; the backend watches it."""
    (tmp_path / f"{name}.py").write_text("class CUDAGraph:\n    def capture_begin(self): pass\n"
                                         "    def capture_end(self): pass\n    def replay(self): pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(armed, "GRAPHS_MODULE", name)
    monkeypatch.setattr(graph_replays, "graph_class", lambda: None)  # torch not imported yet
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_armed_before_torch_is_imported_the_graph_class_is_wrapped_at_its_import(tmp_path, backend, monkeypatch):
    _graphs_module(tmp_path, monkeypatch, "armed_graphs_later")
    profiler.arm_device_timer()
    import armed_graphs_later  # deferred: the import under test, after arming

    assert armed_graphs_later.CUDAGraph in graph_replays.installed()
    assert not any(isinstance(f, armed.after_import.AfterImport) and f.name == "armed_graphs_later" for f in sys.meta_path)


def test_disarmed_before_torch_is_imported_nothing_waits_for_it(tmp_path, backend, monkeypatch):
    _graphs_module(tmp_path, monkeypatch, "armed_graphs_never")
    profiler.arm_device_timer()
    profiler.disarm_device_timer()
    import armed_graphs_never  # deferred: the import under test, after disarming

    assert armed_graphs_never.CUDAGraph not in graph_replays.installed()
    assert not any(isinstance(f, armed.after_import.AfterImport) and f.name == "armed_graphs_never" for f in sys.meta_path)


def _import_with(value, **env):
    """`import flagtree.profiler` in a fresh interpreter with the variable set: (rc, stderr, armed)."""
    env = dict(os.environ, FLAGTREE_PROFILER_DEVICE_TIMER_ARM=value, **env)
    code = ("import flagtree.profiler\nfrom flagtree.profiler.backends import get_backend\n"
            "print(get_backend('device_timer').armed is not None)")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stderr, done.stdout.strip()


@pytest.mark.parametrize("value, env, why", [
    ("1", {"TRITON_INTERPRET": "1"}, "Triton's interpreter"),
    ("slots=7", {}, "slots"),  # a bad mode
])
def test_the_variable_warns_and_the_import_goes_on_where_the_route_cannot_run(value, env, why):
    rc, stderr, armed_now = _import_with(value, **env)
    assert rc == 0 and armed_now == "False", stderr
    assert stderr.count("FLAGTREE_PROFILER_DEVICE_TIMER_ARM") == 1 and "not armed" in stderr and why in stderr


def test_the_variable_arms_where_the_route_runs_and_warns_where_it_does_not():
    why_not = get_backend("device_timer").unavailable_reason()
    rc, stderr, armed_now = _import_with("on")
    assert rc == 0, stderr
    if why_not is None:  # a GPU machine: armed at import
        assert armed_now == "True" and "not armed" not in stderr
    else:  # no CUDA driver here: one warning, the package imported all the same
        assert armed_now == "False" and stderr.count("the device_timer route is not armed") == 1


def test_the_variable_off_arms_nothing_and_imports_no_triton():
    env = dict(os.environ, FLAGTREE_PROFILER_DEVICE_TIMER_ARM="0")
    code = "import sys, flagtree.profiler\nprint('triton' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "False" and not done.stderr, done.stderr
