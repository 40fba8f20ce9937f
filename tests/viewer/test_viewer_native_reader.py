"""The reader's two paths agree: the native fast path (when built) and the pure-Python one.
(The slow runs here also turn off the native sums and print order: test_viewer_native_walks.)

The native reader takes only plain input and hands anything else to the Python reader, so
the viewer's output (and exit status, and error line) must be the same either way: checked
on every fixture, on generated trees and on the fuzz test's mutated inputs. The Python
path's own C-speed shortcuts (plain_metrics) are checked against its exact path here too.
"""

import json
import random

import pytest

from flagtree.profiler.viewer import native_read, reader
from flagtree.profiler.viewer.nodes import Node, plain_metrics
from test_viewer_fuzz import OPTION_SETS, _mutate, _seed_texts
from viewer_helpers import FIXTURES, H100, both_paths, captured_run, kernel, node

native = pytest.mark.skipif(reader.NATIVE_READ is None, reason="native core not built")


def _write(tmp_path, content, name="p.hatchet"):
    path = tmp_path / name
    text = content if isinstance(content, str) else json.dumps(content)
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return str(path)


def _native_takes(path):
    with open(path, "rb") as handle:
        data = handle.read()
    found = reader.NATIVE_READ(data, Node, set())
    if found is not None:
        native_read.unlink(found[0])
    return found is not None


def _profile(rng, size):
    """A random tree with scopes, kernels with metadata, python frames."""
    nodes = [node("ROOT")]
    for index in range(1, size):
        parent = rng.choice(nodes[: max(1, index // 2)])
        if rng.random() < 0.4:
            child = node(f"/a/m.py:{index}@f{index}", {"cpu_time (ns)": index})
        else:
            child = kernel(f"k{index}", rng.randint(1, 10**7), rng.randint(1, 9),
                           flops16=rng.randint(0, 10**12), bytes=rng.random() * 1e9)
            child["metadata"] = {"grid": [rng.randint(1, 99), 1, 1], "ok": True, "n": None}
            child["frame"]["kind"] = "kernel"
        parent["children"].append(child)
        nodes.append(child)
    return [nodes[0], H100]


@native
def test_plain_profiles_take_the_native_path(tmp_path, monkeypatch):
    rng = random.Random(7)
    for size in (50, 400):
        path = _write(tmp_path, _profile(rng, size))
        assert _native_takes(path)
        for options in ([], ["-m", "time/ms,count,tflop16/s,util"], ["--print-sorted"], ["-l"]):
            fast, slow = both_paths(monkeypatch, [*options, path])
            assert fast == slow and fast[0] == 0, (size, options)


UNUSUAL = {
    "escaped name": '[{"frame": {"name": "a\\u001b"}, "metrics": {}, "children": []}, {}]',
    "NaN metric": '[{"frame": {"name": "R"}, "metrics": {"time (ns)": NaN}, "children": []}]',
    "bool metric": '[{"frame": {"name": "R"}, "metrics": {"count": true}, "children": []}]',
    "huge int": '[{"frame": {"name": "R"}, "metrics": {"count": 1' + "0" * 30 + '}}]',
    "string device": '[{"frame": {"name": "R"}, "metrics": {"device_type": "CUDA"}}]',
    "same-named siblings": json.dumps([node("R", {}, kernel("k", 5), kernel("k", 7)), {}]),
    "node inside metadata": '[{"frame": {"name": "R"}, "metadata": {"frame": {"name": 1}}}]',
    "repeated metrics": '[{"frame": {"name": "R"}, "metrics": {"a": 1}, "metrics": {"b": 2}}]',
    "children null": '[{"frame": {"name": "R"}, "metrics": {"a": 1}, "children": null}]',
    "no frame": '[{"metrics": {"a": 1}}]',
    "bad UTF-8": b'[{"frame": {"name": "R\xff"}}]'.decode("utf-8", "surrogateescape"),
    "bad UTF-8 skipped": b'[{"frame": {"name": "R", "x": "\xc3"}}]'.decode("utf-8", "surrogateescape"),
    "BOM": "\ufeff" + json.dumps([node("R", {"a": 1}), {}]),
    "trailing data": json.dumps([node("R", {"a": 1}), {}]) + " x",
    "three elements": json.dumps([node("R", {"a": 1}), {}, {}]),
    "device_info a list": json.dumps([node("R", {"a": 1}), []]),
}


@native
@pytest.mark.parametrize("case", sorted(UNUSUAL))
def test_unusual_input_is_left_to_the_python_reader(tmp_path, monkeypatch, case):
    path = _write(tmp_path, UNUSUAL[case])
    assert not _native_takes(path) or case in ("trailing data", "three elements",
                                                "device_info a list")
    for options in ([], ["-m", "count"]):
        fast, slow = both_paths(monkeypatch, [*options, path])
        assert fast == slow, (case, options)


@native
def test_fuzzed_inputs_read_the_same_on_both_paths(tmp_path, monkeypatch):
    rng = random.Random(20261202)
    seeds = _seed_texts()
    outcomes = set()
    for index in range(300):
        path = _write(tmp_path, _mutate(rng, rng.choice(seeds)), f"f{index % 4}.hatchet")
        options = rng.choice(OPTION_SETS)
        fast, slow = both_paths(monkeypatch, [*options, path])
        assert fast == slow, (index, options)
        outcomes.add(fast[0])
    assert outcomes == {0, 2}


@native
def test_fixtures_read_the_same_on_both_paths(monkeypatch):
    for path in sorted(FIXTURES.glob("*.hatchet")):
        fast, slow = both_paths(monkeypatch, ["-m", "time/ns" if "time" in path.read_text() else "count",
                                         str(path)])
        assert fast == slow, path.name


def test_plain_metrics_never_laxer_than_the_exact_check():
    big = 1 << 63
    plain = [{"a": 1, "b": 2.5}, {"time (ns)": big - 1}, {"device_id": 3, "device_type": 1}]
    unusual = [{}, {"a": True}, {"a": big}, {"a": -big}, {"a": float("nan")}, {"a": "1"},
               {"a": None}, {"a": [1]}, {"a": 1.5, "b": 10 ** 400}, {"device_id": 1.0}, {"device_type": -1},
               {"device_id": 1 << 31}, {"device_type": "CUDA"}]
    for metrics in plain:
        assert plain_metrics(metrics), metrics
    for metrics in unusual:
        assert not plain_metrics(metrics), metrics
    # Without JSON booleans in the text the type check is skipped: still no str or None.
    assert not plain_metrics({"a": "x"}, bools=False)
    assert not plain_metrics({"a": None}, bools=False)


def test_a_boolean_metric_is_refused_on_the_python_path(tmp_path, monkeypatch, viewer):
    monkeypatch.setattr(reader, "NATIVE_READ", None)
    path = _write(tmp_path, '[{"frame": {"name": "R"}, "metrics": {"count": true}}, {}]')
    status, out, err = viewer("-m", "count", path)
    assert status == 2 and out == "" and "is not a number" in err


@native
def test_native_reader_says_whether_a_name_has_the_metadata_mark(tmp_path, monkeypatch):
    plain = _write(tmp_path, [node("ROOT", {}, kernel("k", 5)), {}], "plain.hatchet")
    hooked = _write(tmp_path, [node("ROOT", {}, node("s", {}, node("__launch_metadata", {}, kernel("m", 2))),
                                    kernel("k", 5)), {}], "hooked.hatchet")
    for path, marked in ((plain, False), (hooked, True)):
        with open(path, "rb") as handle:
            found = reader.NATIVE_READ(handle.read(), Node, set())
        assert found[2] is marked
        native_read.unlink(found[0])
        fast, slow = both_paths(monkeypatch, ["-m", "time/ns", path])
        assert fast == slow and fast[0] == 0
        assert "m\n" not in fast[1]


class _OtherInit(Node):
    """A node class whose __init__ is not Node's: the native reader must call it."""

    __slots__ = ()

    def __init__(self, name, kernel, metrics, parent=None):
        super().__init__(name, kernel, metrics, parent)
        self.values = ("made by __init__",)


@native
def test_native_reader_calls_a_node_class_it_cannot_build_itself(tmp_path):
    path = _write(tmp_path, _profile(random.Random(3), 60))
    with open(path, "rb") as handle:
        data = handle.read()
    for cls in (Node, _OtherInit):
        root = reader.NATIVE_READ(data, cls, set())[0]
        stack, seen = [root], 0
        while stack:
            current = stack.pop()
            seen += 1
            assert type(current) is cls
            assert current.values == (None if cls is Node else ("made by __init__",))
            assert current.incl is None and all(kid.parent is current for kid in current.children.values())
            stack.extend(current.children.values())
        assert seen == 60
        native_read.unlink(root)
