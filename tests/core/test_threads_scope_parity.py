"""Scope API parity with Proton: exit_scope(name, metrics) adds metrics at exit; a scope exit
that leaves another scope than the one named warns once; metrics and states as documented."""
import warnings

import pytest

import flagtree.profiler as profiler
from support.kernels import launch_add, tensors
from support.profiles import find, kernel_counts, load_tree


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def test_exit_scope_metrics_add_to_the_scope_left(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "m"))
    for _ in range(2):
        profiler.enter_scope("work", {"bytes": 10})
        launch_add(x, y, out)
        profiler.exit_scope("work", metrics={"bytes": 5, "items": 3})
    profiler.finalize()
    root, _ = load_tree(tmp_path / "m.hatchet")
    metrics = find(root, "work")["metrics"]
    assert metrics["bytes"] == 30 and metrics["items"] == 6


def test_exit_scope_metrics_are_checked_like_entry_metrics():
    with pytest.raises(TypeError, match="int or float"):
        profiler.exit_scope("x", metrics={"bytes": "ten"})


def test_with_scope_leaving_another_scope_warns_once(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "w"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with profiler.scope("outer_mismatch"):
                profiler.enter_scope("left_open")
                launch_add(x, y, out)
            profiler.exit_scope()  # leaves outer_mismatch, which the with-block did not
    mismatches = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(mismatches) == 1 and mismatches[0].filename == __file__  # the with-block's line, not the profiler's
    assert "'outer_mismatch'" in str(mismatches[0].message) and "'left_open'" in str(mismatches[0].message)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "w.hatchet")
    assert kernel_counts(root) == {("outer_mismatch", "left_open", "add_kernel"): 3}


def test_exit_scope_by_wrong_name_or_on_empty_stack_warns(tmp_path):
    profiler.start(str(tmp_path / "e"))
    with pytest.warns(RuntimeWarning, match="'named_wrong'.*'actual'"):
        profiler.enter_scope("actual")
        profiler.exit_scope("named_wrong")
    with pytest.warns(RuntimeWarning, match="'nothing_open'.*no scope was open"):
        profiler.exit_scope("nothing_open")


def test_scope_metrics_go_to_shadow_sessions_only(tmp_path):
    # README: scope metrics are summed per scope node; a python-context tree has no scope nodes.
    x, y, out = tensors()
    profiler.start(str(tmp_path / "s"), context="shadow")
    profiler.start(str(tmp_path / "p"), context="python")
    with profiler.scope("measured", {"bytes": 7}):
        launch_add(x, y, out)
    profiler.finalize()
    shadow, _ = load_tree(tmp_path / "s.hatchet")
    python, _ = load_tree(tmp_path / "p.hatchet")
    assert find(shadow, "measured")["metrics"]["bytes"] == 7
    assert not any("bytes" in str(n) for n in python["children"])


def test_state_is_not_recursive_and_inner_state_wins(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "st"))
    with profiler.state("a"):
        with profiler.state("b"):
            launch_add(x, y, out)
        launch_add(x, y, out)
    launch_add(x, y, out)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "st.hatchet")
    assert kernel_counts(root) == {("b", "add_kernel"): 1, ("a", "add_kernel"): 1, ("add_kernel",): 1}
