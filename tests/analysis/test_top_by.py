"""``top(by="kernel")`` sums a kernel over its calling contexts (the report's "Top kernels");
``top(by="node")`` ranks single nodes: the two orders differ on a profile where they should."""
import json

import pytest

from flagtree.profiler.analysis import read

pytest.importorskip("pandas")


def _node(name, kind, metrics=None, children=()):
    return {"frame": {"name": name, "type": "function", "kind": kind}, "metrics": metrics or {},
            "children": list(children)}


def _kernel(name, time_ns, count):
    return _node(name, "kernel", {"time (ns)": time_ns, "count": count, "device_id": 0, "device_type": 2})


@pytest.fixture
def spread(tmp_path):
    """`small` runs in two scopes (5 ms + 3 ms), `big` once (6 ms), `small` also under `big` as a
    device scope would sit (counted with `big`)."""
    big = _kernel("big", 6_000_000, 1)
    big["children"].append(_kernel("small", 1_000_000, 1))
    root = _node("ROOT", "root", children=[_node("a", "scope", children=[_kernel("small", 5_000_000, 1)]),
                                            _node("b", "scope", children=[_kernel("small", 3_000_000, 2), big])])
    path = tmp_path / "spread.hatchet"
    path.write_text(json.dumps([root, {"CPU": {"0": {"arch": "cpu"}}}]))
    return read(str(path), metrics="time/ms,time/%,avg_time/us")


def test_by_kernel_sums_calling_contexts_and_by_node_ranks_nodes(spread):
    kernels = spread.top(by="kernel")
    assert list(kernels.index) == ["small", "big"]
    assert kernels.loc["small", "time/ms"] == pytest.approx(8.0)
    assert kernels.loc["big", "time/ms"] == pytest.approx(7.0)  # its device-scope child counts with it
    assert list(kernels.loc["small", ["contexts", "count"]]) == [2, 3]
    assert "avg_time/us" not in kernels.columns  # a mean does not add up over contexts
    nodes = spread.top(by="node")
    assert list(nodes["name"])[:2] == ["big", "small"] and list(nodes["time/ms"])[:2] == pytest.approx([7.0, 5.0])


def test_by_kernel_refuses_what_does_not_add_up(spread):
    with pytest.raises(ValueError, match="only times, shares"):
        spread.top(metric="avg_time/us", by="kernel")
    with pytest.raises(ValueError, match="needs by='node'"):
        spread.top(kind="scope", by="kernel")
    with pytest.raises(ValueError, match="by must be"):
        spread.top(by="name")


def test_siblings_are_listed_in_file_order(spread):
    names = [view.name for view in spread.nodes()]
    assert names == ["ROOT", "a", "small", "b", "small", "big", "small"]
    assert list(spread.to_dataframe()["name"]) == names
