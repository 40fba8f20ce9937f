"""Proton's scope metric suffixes: "name (pty)" is a property (a number or a text, set on its node,
not summed: the last value given stands), "name (exc)" an exclusive metric (a number adds up on
its node only, a text is set); both are written under the name without the suffix. The first two
tests are Proton's own (Triton 3.6, test_api.py), on the interpreter backend."""
import json
import threading
import warnings

import pytest

import flagtree.profiler as profiler
from support.json_check import load_strict
from support.kernels import launch_add, tensors
from support.profiles import find, load_json, load_tree


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def children(root):
    return {c["frame"]["name"]: c for c in root["children"]}


def test_scope_properties_as_protons_test_has_them(tmp_path):
    profiler.start(str(tmp_path / "p"), backend="interpreter")
    with profiler.scope("test0", {"a (pty)": "1"}):
        pass

    @profiler.scope("test1", {"a (pty)": "1"})
    def foo():
        pass

    foo()
    profiler.enter_scope("test2", metrics={"a (pty)": 1.0})  # properties do not aggregate
    profiler.exit_scope()
    profiler.enter_scope("test2", metrics={"a (pty)": 1.0})
    profiler.exit_scope()
    profiler.finalize()
    nodes = children(load_strict(tmp_path / "p.hatchet")[0])
    assert nodes["test0"]["metrics"] == {"a": "1"} and nodes["test1"]["metrics"] == {"a": "1"}
    assert nodes["test2"]["metrics"] == {"a": 1.0}


def test_scope_exclusive_as_protons_test_has_it(tmp_path):
    profiler.start(str(tmp_path / "e"), backend="interpreter")
    with profiler.scope("test0", metrics={"a (exc)": "1"}):
        with profiler.scope("test1", metrics={"b (exc)": "1"}):
            pass
    profiler.finalize()
    root = load_strict(tmp_path / "e.hatchet")[0]
    assert len(root["metrics"]) == 0
    test0 = root["children"][0]
    assert test0["metrics"] == {"a": "1"}
    assert test0["children"][0]["metrics"] == {"b": "1"}


def test_repeats_keep_the_last_property_and_add_exclusive_numbers(tmp_path):
    profiler.start(str(tmp_path / "r"))
    for value in ("x", "y"):
        with profiler.scope("s", {"p (pty)": value, "n (pty)": len(value) * 3, "e (exc)": 2, "t (exc)": value}):
            pass
    profiler.enter_scope("s", metrics={"e (exc)": 0.5})
    profiler.exit_scope(metrics={"p (pty)": "at exit", "e (exc)": 1, "plain": 4})  # exit's go to the same node
    profiler.finalize()
    metrics = children(load_strict(tmp_path / "r.hatchet")[0])["s"]["metrics"]
    assert metrics == {"e": 5.5, "plain": 4.0, "p": "at exit", "n": 3.0, "t": "y"}


def test_plain_metrics_still_add_up_an_int_after_a_float_too(tmp_path):
    # Proton raises "Metric value type mismatch" here; a sum of int and float loses nothing.
    profiler.start(str(tmp_path / "m"))
    with profiler.scope("test0", {"a": 1.0}):
        pass
    with profiler.scope("test0", {"a": 1}):
        pass
    with profiler.scope("test0", {"big": 2 ** 40}):
        pass
    profiler.finalize()
    assert children(load_strict(tmp_path / "m.hatchet")[0])["test0"]["metrics"] == {"a": 2.0, "big": 2.0 ** 40}


def test_a_property_may_change_type_without_complaint(tmp_path):
    profiler.start(str(tmp_path / "t"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with profiler.scope("s", {"a (pty)": "text"}):
            pass
        with profiler.scope("s", {"a (pty)": 7}):
            pass
        profiler.finalize()
    assert children(load_strict(tmp_path / "t.hatchet")[0])["s"]["metrics"] == {"a": 7.0}
    assert "metric_conflicts" not in load_json(tmp_path / "t.meta.json")


@pytest.mark.parametrize("first,second,kept", [
    ({"a": 1.0}, {"a (pty)": "x"}, "x"),           # a sum, then a property of its name
    ({"a (pty)": 2}, {"a": 3}, 3.0),               # a property, then a sum
    ({"a (exc)": "x"}, {"a (exc)": 4}, 4.0),       # an exclusive text, then a number
    ({"a (exc)": 4}, {"a (exc)": "x"}, "x"),       # an exclusive number, then a text
])
def test_values_that_cannot_join_keep_the_last_and_are_warned_of(tmp_path, first, second, kept):
    profiler.start(str(tmp_path / "c"))
    with profiler.scope("s", first):
        pass
    with profiler.scope("s", second):
        pass
    with profiler.scope("other", second):  # another node: no conflict
        pass
    with pytest.warns(UserWarning, match=r"1 scope metrics met a value of the same name .*first: 'a'"):
        profiler.finalize()
    nodes = children(load_strict(tmp_path / "c.hatchet")[0])  # one key "a" per node
    assert nodes["s"]["metrics"] == {"a": kept}
    meta = load_json(tmp_path / "c.meta.json")
    assert meta["metric_conflicts"] == 1 and meta["first_metric_conflict"] == "a"


def test_texts_are_escaped_and_names_lose_their_suffix_only(tmp_path):
    text = 'q"uote \\ back\nline \t\x01 é 𝄞 ' + "\u2028"
    profiler.start(str(tmp_path / "x"))
    with profiler.scope("s", {'na"me\\ (pty)': text, " spaced  (exc)": "v", "(pty) first (pty)": 1}):
        pass
    profiler.finalize()
    assert b"\n" not in (tmp_path / "x.hatchet").read_bytes()  # the newline is escaped, not written
    metrics = children(load_strict(tmp_path / "x.hatchet")[0])["s"]["metrics"]
    assert metrics == {'na"me\\': text, "spaced": "v", "(pty) first": 1.0}


@pytest.mark.parametrize("metrics,error,message", [
    ({"a": "1"}, TypeError, r"must map a name to an int or float, got '1'; a text value needs a name ending in "
                            r"\(pty\) \(a property\) or \(exc\) \(exclusive\)"),
    ({"a (pty)": [1, 2]}, TypeError, r"must map a name to an int, float or str, got \[1, 2\]"),
    ({"a (exc)": None}, TypeError, r"must map a name to an int, float or str, got None"),
    ({"a (pty)": True}, TypeError, r"got True"),
    ({"(pty)": "x"}, ValueError, r"the name before \(pty\) must be text"),
    ({"cpu_time (ns)(exc)": 5}, ValueError, r"which the profiler writes itself"),
    ({"count (pty)": 1}, ValueError, r"which the profiler writes itself"),
    ({"cpu_time (ns)": 5}, ValueError, r"which the profiler writes itself"),
    ({"count": 1}, ValueError, r"which the profiler writes itself"),
    ({"bytes": 10 ** 400}, ValueError, r"^scope metric 'bytes': an int of 1329 bits is too large for a float64"),
    ({"n (pty)": -10 ** 400}, ValueError, r"^scope metric 'n \(pty\)': an int of 1329 bits is too large"),
    ({"a (pty)": "\ud800"}, ValueError, r"lone surrogate"),
    ({1: 2.0}, TypeError, r"scope metric names must be strings, got 1"),
])
def test_bad_metrics_are_refused_when_the_scope_is_made(tmp_path, metrics, error, message):
    profiler.start(str(tmp_path / "b"))
    with pytest.raises(error, match=message):
        profiler.scope("s", metrics)
    with profiler.scope("s", {"ok": 1}):
        with pytest.raises(error, match=message):
            profiler.exit_scope(metrics=metrics)  # refused before anything is left
    with profiler.scope("after", {"ok": 1}):
        pass
    profiler.finalize()
    nodes = children(load_strict(tmp_path / "b.hatchet")[0])
    assert nodes["s"]["metrics"] == {"ok": 1.0} and nodes["s"]["children"] == []
    assert nodes["after"]["metrics"] == {"ok": 1.0}  # the with block left "s" once, as it should


def test_exit_scope_given_a_name_that_is_not_utf8_raises_before_leaving_the_scope():
    from flagtree.profiler import _native

    with profiler.scope("s"):
        with pytest.raises(ValueError, match="lone surrogate"):
            profiler.exit_scope("\ud800")
        assert _native.testing.scope_depth() == 1  # "s" is still open: the with block leaves it
    assert _native.testing.scope_depth() == 0


def test_threads_set_and_add_on_one_node_at_once(tmp_path):
    profiler.start(str(tmp_path / "th"))
    workers, rounds = 8, 300
    start = threading.Barrier(workers)

    def work(k):
        start.wait()
        for i in range(rounds):
            with profiler.scope("shared", {"who (pty)": f"t{k}", "step (pty)": i, "n": 1, "m (exc)": 2}):
                pass

    threads = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    profiler.finalize()
    metrics = children(load_strict(tmp_path / "th.hatchet")[0])["shared"]["metrics"]
    assert metrics["n"] == workers * rounds and metrics["m"] == 2 * workers * rounds
    assert metrics["who"] in {f"t{k}" for k in range(workers)} and metrics["step"] == rounds - 1


def test_each_part_holds_the_properties_given_in_it(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "q"))
    with profiler.scope("only", {"tag (pty)": "first"}):  # a node with a property and nothing else
        pass
    with profiler.scope("run", {"tag (pty)": "one", "n": 1}):
        launch_add(x, y, out)
    first, = profiler.flush_part(sid, wait=True)
    with profiler.scope("run", {"tag (pty)": "two"}):
        launch_add(x, y, out)
    profiler.finalize(sid)
    part1 = children(load_strict(first)[0])
    part2 = children(load_strict(tmp_path / "q.part2.hatchet")[0])
    assert part1["only"]["metrics"] == {"tag": "first"}  # kept, though it has no number
    assert part1["run"]["metrics"] == {"tag": "one", "n": 1.0}
    assert "only" not in part2  # nothing given to it in this part
    assert part2["run"]["metrics"] == {"tag": "two"}


def test_a_scheduled_part_holds_its_window_properties(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "w"), schedule=profiler.schedule(wait=1, active=1))
    written = []
    for k in range(4):
        with profiler.scope("step", {"k (pty)": k, "name (pty)": f"step{k}"}):
            launch_add(x, y, out)
        written += profiler.step(sid)
    profiler.finalize(sid)
    assert len(written) == 2
    tags = [children(load_strict(p)[0])["step"]["metrics"] for p in written]
    assert [(t["k"], t["name"]) for t in tags] == [(1.0, "step1"), (3.0, "step3")]


def test_a_trace_session_takes_properties_and_writes_none(tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "tr"), data="trace")
    with profiler.scope("s", {"a (pty)": "text", "b (exc)": 1, "c": 2}):
        launch_add(x, y, out)
    profiler.finalize()
    text = (tmp_path / "tr.chrome_trace").read_text()
    json.loads(text)
    assert '"text"' not in text


def test_a_state_takes_the_properties_of_a_scope_entered_under_it(tmp_path):
    profiler.start(str(tmp_path / "st"))
    with profiler.scope("outer"):
        with profiler.state("s0"):
            with profiler.scope("inner", {"a (pty)": "on the state"}):
                pass
    profiler.finalize()
    root = load_strict(tmp_path / "st.hatchet")[0]
    assert find(root, "outer", "inner", "s0")["metrics"] == {"a": "on the state"}
    assert find(root, "outer", "inner")["metrics"] == {}
    assert load_tree(tmp_path / "st.hatchet")[0]["metrics"] == {}
