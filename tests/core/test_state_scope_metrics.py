"""A state applies to scope metrics as it does to kernels: the metrics of a scope entered (or left,
or cpu-timed) under a state go to that state's node below the scope, as Proton's tree has it."""
import pytest

import flagtree.profiler as profiler
from support.kernels import launch_add, tensors
from support.profiles import load_tree, walk


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def shape(root):
    """{path: (kind, metrics without count)} of every node below ROOT."""
    return {p: (n["frame"]["kind"], {k: v for k, v in n["metrics"].items() if k != "count"})
            for p, n in walk(root)}


def test_scope_metrics_under_a_state_sit_on_the_state_below_the_scope(tmp_path):
    profiler.start(str(tmp_path / "s"))
    profiler.enter_scope("test0")
    profiler.enter_state("state")
    profiler.enter_scope("test1", metrics={"a": 1.0})
    profiler.exit_scope()
    profiler.exit_state()
    profiler.exit_scope()
    profiler.finalize()
    root, _ = load_tree(tmp_path / "s.hatchet")
    nodes = shape(root)
    assert nodes[("test0", "test1", "state")] == ("state", {"a": 1.0})
    assert "a" not in nodes[("test0", "test1")][1]


def test_exit_and_cpu_time_metrics_follow_the_state_and_kernels_share_its_node(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "k"))
    with profiler.scope("outer"):
        with profiler.state("s0"):
            profiler.enter_scope("inner", metrics={"bytes": 8})
            launch_add(x, y, out)
            profiler.exit_scope(metrics={"bytes": 2})
            with profiler.cpu_timed_scope("timed"):
                pass
        with profiler.scope("plain", {"bytes": 5}):  # no state: on the scope itself
            pass
    profiler.finalize()
    root, _ = load_tree(tmp_path / "k.hatchet")
    nodes = shape(root)
    assert nodes[("outer", "inner", "s0")][1]["bytes"] == 10
    assert nodes[("outer", "inner", "s0", "add_kernel")][0] == "kernel"  # one state node for both
    assert [p for p in nodes if p[:2] == ("outer", "inner")] == [
        ("outer", "inner"), ("outer", "inner", "s0"), ("outer", "inner", "s0", "add_kernel")]
    assert "cpu_time (ns)" in nodes[("outer", "timed", "s0")][1]
    assert "cpu_time (ns)" not in nodes[("outer", "timed")][1]
    assert nodes[("outer", "plain")] == ("scope", {"bytes": 5})


def test_an_empty_state_name_is_refused_not_taken_for_no_state(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "e"))
    with profiler.state("outer"):
        for make in (profiler.state, profiler.enter_state):
            with pytest.raises(ValueError, match="state name must not be empty"):
                make("")
        launch_add(x, y, out)  # still under "outer": the refused state pushed nothing
    profiler.finalize()
    root, _ = load_tree(tmp_path / "e.hatchet")
    assert {p: kind for p, (kind, _) in shape(root).items()} == {(): "root", ("outer",): "state",
                                                                  ("outer", "add_kernel"): "kernel"}


def test_exit_state_refuses_a_name_that_is_not_text_and_leaves_the_state_on(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "x"))
    profiler.enter_state("outer")
    with pytest.raises(TypeError, match="state name must be a string"):
        profiler.exit_state(3)
    launch_add(x, y, out)  # still under "outer": the refused exit left nothing
    profiler.exit_state("outer")
    launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "x.hatchet")
    assert {p: kind for p, (kind, _) in shape(root).items()} == {
        (): "root", ("outer",): "state", ("outer", "add_kernel"): "kernel", ("add_kernel",): "kernel"}
