"""The Profile object a notebook holds: nodes, DataFrame, GraphFrame, top, errors, HTML."""

import subprocess
import sys

import pytest

from analysis_helpers import fixture, kernel, node, write
from flagtree.profiler import read
from flagtree.profiler.analysis import NodeView, Profile, ViewerError, parse

pd = pytest.importorskip("pandas")


@pytest.fixture
def nested():
    return read(fixture("nested_scopes.hatchet"))


def test_nodes_walk_with_names_kinds_paths_and_metrics(nested):
    root = nested.root
    assert isinstance(nested, Profile) and isinstance(root, NodeView)
    assert root.kind == "root" and root.path == () and root.parent is None and root.depth == 0
    walked = list(root.walk())
    assert len(walked) == len(nested) == len(list(nested.nodes()))
    assert {v.kind for v in walked} == {"root", "scope", "kernel"}
    fwd = nested.node("/home/u/app.py:42@main -> forward -> attn_fwd")
    assert fwd.kind == "kernel" and fwd.depth == 3 and fwd.parent.name == "forward"
    assert fwd.path == ("/home/u/app.py:42@main", "forward", "attn_fwd")
    assert fwd.metrics["time (ns)"] == 1000000 and fwd.metrics["device_id"] == 0
    assert fwd.values["time/ms"] == 1.0 and fwd.values["time/%"] == 10.0
    for view in walked:  # inclusive = own + children's inclusive, for every stored metric
        for key in nested.stored_metrics:
            parts = [view.metrics.get(key)] + [c.inclusive.get(key) for c in view.children]
            known = [p for p in parts if p is not None]
            assert view.inclusive.get(key) == (sum(known) if known else None)
    assert [v.name for v in nested.find("^attn_")] and all(
        v.name.startswith("attn_") for v in nested.find("^attn_"))
    assert {v.name for v in nested.nodes(kind="kernel")} == {
        "attn_fwd", "layernorm_kernel", "attn_bwd", "reduce_kernel", "copy_kernel"}
    assert fwd in set(nested.find("attn_fwd")) and root.child(fwd.path[0]).name == fwd.path[0]
    with pytest.raises(KeyError):
        nested.node(["no such scope"])
    with pytest.raises(ValueError):
        list(nested.nodes(kind="frame"))


def test_dataframe_has_a_row_per_node_with_exclusive_inclusive_and_derived(nested):
    frame = nested.to_dataframe()
    assert len(frame) == len(nested) and frame.index.name == "node"
    assert list(frame.columns[:4]) == ["name", "kind", "depth", "parent"]
    for key in nested.stored_metrics:
        assert key in frame.columns and f"{key} (inc)" in frame.columns
    for spec in nested.metrics:
        assert spec in frame.columns
    for view in nested.nodes():
        row = frame.loc[view.id]
        assert row["name"] == view.name and row["kind"] == view.kind and row["depth"] == view.depth
        assert row["parent"] == (-1 if view.parent is None else view.parent.id)
        for spec, value in view.values.items():
            assert (pd.isna(row[spec]) if value is None else row[spec] == pytest.approx(value)), spec
    # inclusive columns are the exclusive ones summed over subtrees (checked with pandas)
    inc = frame["time (ns) (inc)"]
    children = frame.groupby("parent")["time (ns) (inc)"].sum()
    own = frame["time (ns)"].fillna(0)
    for row in frame.index:
        assert inc[row] == own[row] + children.get(row, 0)
    assert frame.loc[0, "time/%"] == 100.0 and frame.loc[0, "kind"] == "root"


def test_a_stored_name_chosen_as_a_column_keeps_both_values(nested):
    profile = read(fixture("nested_scopes.hatchet"), metrics="time/ms,count")
    frame = profile.to_dataframe()
    assert list(frame["count"]) == list(frame["count (inc)"])  # the viewer's -m count: inclusive
    assert frame["count (exc)"].sum() == 10 and frame.loc[0, "count"] == 10
    assert list(profile.top(2)["count"]) == [2, 4] and "count" in profile._repr_html_()


def test_dataframe_without_pandas_says_how_to_get_it(nested, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"to_dataframe\(\) needs pandas.*pip install pandas"):
        nested.to_dataframe()
    with pytest.raises(ImportError, match="pip install pandas"):
        nested.top()
    assert [v.name for v in nested.top_nodes(2)] == ["attn_bwd", "layernorm_kernel"]  # no pandas


def test_graphframe_is_one_hatchet_would_have_built(nested):
    hatchet = pytest.importorskip("hatchet")
    gf = nested.to_graphframe()
    assert isinstance(gf, hatchet.GraphFrame) and gf.graph.is_tree()
    frame = nested.to_dataframe()
    hnodes = list(gf.dataframe.index)
    assert [n._hatchet_nid for n in hnodes] == list(range(len(frame)))
    assert list(gf.dataframe["name"]) == list(frame["name"])
    assert len(gf.graph.roots) == 1 and gf.graph.roots[0].frame["name"] == "ROOT"
    for hnode, parent in zip(hnodes, frame["parent"]):
        assert (hnode.parents[0]._hatchet_nid if hnode.parents else -1) == parent
        assert hnode._depth == frame.loc[hnode._hatchet_nid, "depth"]
    assert set(gf.exc_metrics) == set(nested.stored_metrics)
    assert set(nested.metrics) <= set(gf.inc_metrics)
    # hatchet's own inclusive sums over our exclusive columns give our inclusive columns
    ours = gf.dataframe[[f"{m} (inc)" for m in nested.stored_metrics]].copy()
    copy = gf.deepcopy()
    copy.dataframe = copy.dataframe.drop(columns=list(ours.columns))
    copy.inc_metrics = []
    copy.update_inclusive_columns()
    for column in ours.columns:
        assert list(copy.dataframe[column].fillna(0)) == list(ours[column].fillna(0)), column
    text = gf.tree(metric_column="time/ms")
    assert "attn_bwd" in text and "ROOT" in text


def test_proton_shaped_parse_gives_a_graphframe_and_metric_names():
    pytest.importorskip("hatchet")
    gf, metrics = parse(["time/ms", "util"], fixture("proton_matmul.hatchet"))
    assert metrics == ["time/ms", "util"] and {"time/ms", "util"} <= set(gf.dataframe.columns)


def test_top_is_a_table_of_the_largest_nodes(nested):
    top = nested.top(3)
    assert list(top["name"]) == ["attn_bwd", "layernorm_kernel", "copy_kernel"]
    assert list(top.columns[:4]) == ["path", "name", "kind", "time/ms"]
    assert top.iloc[0]["path"] == "/home/u/app.py:42@main -> backward -> attn_bwd"
    assert list(top["count"]) == [2, 4, 1]
    frame = nested.to_dataframe()
    assert list(frame.loc[top.index, "name"]) == list(top["name"])  # index = node ids
    scopes = nested.top(2, metric="cpu_time/ms", kind="scope")
    # backward and grad_fn tie at 0.3 ms: the name breaks the tie, as in the viewer
    assert list(scopes["name"]) == ["/home/u/app.py:42@main", "/home/u/model.py:7@grad_fn"]
    assert list(nested.top(1, metric="count", kind=None)["name"]) == ["/home/u/app.py:42@main"]
    with pytest.raises(KeyError, match="not a column"):
        nested.top(3, metric="time/fortnight")
    with pytest.raises(ValueError):
        nested.top(3, kind="frame")


@pytest.mark.parametrize("call, message", [
    (lambda: read(), "at least one profile"),
    (lambda: read("/no/such/profile.hatchet"), "cannot read profile"),
    (lambda: read(fixture("nested_scopes.hatchet"), metrics="time/fortnight"), "unknown unit"),
    (lambda: read(fixture("cycles.hatchet"), metrics="time/ms"), "needs 'time \\(ns\\)'"),
    (lambda: read(fixture("nested_scopes.hatchet"), include="("), "invalid include regex"),
    (lambda: read(fixture("nested_scopes.hatchet"), metrics=""), "at least one metric"),
])
def test_bad_input_raises_the_viewers_errors(call, message):
    with pytest.raises(ViewerError, match=message):
        call()


def test_empty_and_not_a_profile(tmp_path):
    empty = write(tmp_path / "e.hatchet", node("ROOT"))
    with pytest.raises(ViewerError, match="is empty"):
        read(empty)
    (tmp_path / "x.hatchet").write_text("{}")
    with pytest.raises(ViewerError, match="not a tree profile"):
        read(tmp_path / "x.hatchet")


def test_import_of_the_package_leaves_the_analysis_api_unloaded():
    code = ("import sys, flagtree.profiler as p\n"
            "assert 'flagtree.profiler.analysis' not in sys.modules\n"
            "assert 'flagtree.profiler.viewer.reader' not in sys.modules\n"
            "assert 'read' in p.__all__ and p.read.__module__ == 'flagtree.profiler.analysis.profile'\n"
            "assert 'flagtree.profiler.analysis' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_html_view_escapes_names_and_lists_top_kernels(tmp_path):
    names = ["<script>alert(1)</script>", "\x1b[2Jclear", "a&b\"'", "line\nbreak"]
    wide = [kernel(f"k{i}", 100 + i) for i in range(20)]
    root = node("ROOT", {}, node("step <b>", {}, *[kernel(n, 5000 + i) for i, n in enumerate(names)]),
                node("wide", {}, *wide))
    profile = read(write(tmp_path / "h.hatchet", root))
    html = profile._repr_html_()
    assert "<script" not in html and "step <b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "step &lt;b&gt;" in html
    assert "\x1b" not in html and "\\x1b[2Jclear" in html and "\n" not in html
    assert "a&amp;b&quot;&#x27;" in html and "line\\x0abreak" in html
    assert "Top kernel nodes" in html and "12 more" in html  # 20 children, 8 drawn
    assert html.index("&lt;script&gt;") < html.index("k19")  # largest first
    assert "\x1b" not in repr(profile) and "\x1b" not in repr(profile.find("clear")[0])


def test_a_100000_deep_chain_reads_walks_and_tabulates(tmp_path):
    depth = 100_000
    path = tmp_path / "chain.hatchet"
    with open(path, "w") as out:  # written flat: no recursion on this side either
        out.write("[")
        for level in range(depth):
            name = "ROOT" if level == 0 else f"s{level}"
            out.write('{"frame": {"name": "%s"}, "metrics": {"time (ns)": 1, "count": 1}, '
                      '"children": [' % name)
        out.write('{"frame": {"name": "k"}, "metrics": {"time (ns)": 1000, "count": 1, '
                  '"device_id": 0, "device_type": 1}, "children": []}')
        out.write("]}" * depth + ', {"CUDA": {"0": {"arch": "90"}}}]')
    assert sys.getrecursionlimit() < depth
    profile = read(path)
    assert len(profile) == depth + 1
    deepest = profile.find("^k$")[0]
    assert deepest.depth == depth and len(deepest.path) == depth and deepest.kind == "kernel"
    assert profile.root.value("time (ns)") == depth + 1000  # 1 per level, ROOT too
    assert sum(1 for _ in profile.root.walk()) == depth + 1
    frame = profile.to_dataframe()
    assert frame["depth"].max() == depth and frame.loc[0, "time (ns) (inc)"] == depth + 1000
    assert list(profile.top(1)["name"]) == ["k"]
    html = profile._repr_html_()
    assert "ROOT" in html and len(html) < 20_000 and "more) ..." in html  # a deep path shows its ends
    diff = profile.diff(profile)
    assert len(diff) == depth + 1 and diff.root.value("time (ns)") == 0
    pytest.importorskip("hatchet")
    with pytest.warns(UserWarning, match="100,000 levels deep"):  # hatchet's own calls would recurse
        gf = profile.to_graphframe()
    assert len(gf.dataframe) == depth + 1 and gf.graph.roots[0].frame["name"] == "ROOT"
    profile.close()
