"""The views of CUDA-graph replays (viewer/graph_view.py): nested as written, captured (under the
capture path only), replayed (kernels directly under the replay context). Totals stay exact,
counts are kept, and trees of any depth are rearranged without recursion."""

import pytest

from flagtree.profiler import read
from flagtree.profiler.viewer.errors import ViewerError
from flagtree.profiler.viewer.graph_view import apply_graph_view
from flagtree.profiler.viewer.nodes import Node
from flagtree.profiler.viewer.profile_tree import load_profile, preorder
from flagtree.profiler.viewer.rank_merge import merge_files
from viewer_helpers import kernel, node

CAPTURED = "<captured_at>"
UNKNOWN = "<captured_at:unknown>"


def _tree():
    """Two replay contexts of one graph captured under 'model' (its state 'fwd' kept on the
    capture path), an eager launch beside, one capture of 'model' run eagerly, and a replay
    whose capture was not seen."""
    return [node("ROOT", {},
                 node("decode", {"bytes": 4},
                      node(CAPTURED, {}, node("model", {}, node("fwd", {}, kernel("k1", 100, 10)), kernel("k2", 50, 10))),
                      kernel("eager_k", 7, 1)),
                 node("step2", {}, node(CAPTURED, {}, node("model", {}, kernel("k2", 30, 5)))),
                 node("model", {}, kernel("k2", 3, 1)),
                 node("other", {}, node(UNKNOWN, {}, kernel("k3", 9, 2)))),
            {}]


def _paths(root):
    """{path below the root: (time, count)} of every node holding either."""
    out = {}
    for n in preorder(root):
        if n is not root and ("time (ns)" in n.metrics or "count" in n.metrics):
            out[tuple(n.path_names())] = (n.metrics.get("time (ns)"), n.metrics.get("count"))
    return out


def _totals(root):
    time = count = 0
    for n in preorder(root):
        time += n.metrics.get("time (ns)", 0)
        count += n.metrics.get("count", 0)
    return time, count


@pytest.fixture
def tree_path(write_profile):
    return write_profile(_tree())


def test_nested_is_the_tree_as_written(tree_path):
    profile = load_profile(tree_path)
    before = _paths(profile.root)
    assert apply_graph_view(profile.root, "nested") == 0
    assert _paths(profile.root) == before
    assert before[("decode", CAPTURED, "model", "fwd", "k1")] == (100, 10)


def test_captured_merges_each_capture_path_under_the_root(tree_path):
    profile = load_profile(tree_path)
    assert apply_graph_view(profile.root, "captured") == 3
    assert _paths(profile.root) == {
        ("decode", "eager_k"): (7, 1),
        ("model", "fwd", "k1"): (100, 10),
        ("model", "k2"): (50 + 30 + 3, 10 + 5 + 1),  # both replays and the eager run, summed
        (UNKNOWN, "k3"): (9, 2),  # its capture context is not known: kept as such
    }
    names = set(profile.root.children)
    assert names == {"decode", "model", UNKNOWN}  # step2 and other held only the replays
    assert profile.root.children["decode"].metrics == {"bytes": 4}
    assert _totals(profile.root) == (199, 29)


def test_replayed_puts_the_kernels_directly_under_the_replay_context(tree_path):
    profile = load_profile(tree_path)
    assert apply_graph_view(profile.root, "replayed") == 3
    assert _paths(profile.root) == {
        ("decode", "k1"): (100, 10),
        ("decode", "k2"): (50, 10),
        ("decode", "eager_k"): (7, 1),
        ("step2", "k2"): (30, 5),
        ("model", "k2"): (3, 1),
        ("other", "k3"): (9, 2),
    }
    assert _totals(profile.root) == (199, 29)


def test_a_folded_capture_path_gives_its_own_metrics_to_the_replay_context():
    root = Node("ROOT", False, {})
    replay = Node("replay", False, {})
    root.adopt(replay)
    marker = Node(CAPTURED, False, {})
    replay.adopt(marker)
    scope = Node("scope", False, {"bytes": 8, "count": 1})
    marker.adopt(scope)
    scope.adopt(Node("k", True, {"time (ns)": 5, "count": 2}))
    apply_graph_view(root, "replayed")
    assert replay.metrics == {"bytes": 8, "count": 1} and replay.children["k"].metrics["count"] == 2
    assert _totals(root) == (5, 3)


def test_a_replay_launched_from_the_root_and_an_unknown_capture_at_the_root():
    root = Node("ROOT", False, {})
    marker = Node(CAPTURED, False, {})
    root.adopt(marker)
    marker.adopt(Node("k", True, {"time (ns)": 5, "count": 1}))
    unknown = Node(UNKNOWN, False, {})
    root.adopt(unknown)
    unknown.adopt(Node("k", True, {"time (ns)": 6, "count": 1}))
    apply_graph_view(root, "captured")
    assert _paths(root) == {("k",): (5, 1), (UNKNOWN, "k"): (6, 1)}
    apply_graph_view(root, "replayed")
    assert _paths(root) == {("k",): (11, 2)}


def _chain(parent, names):
    for name in names:
        child = Node(name, False, {})
        parent.adopt(child)
        parent = child
    return parent


@pytest.mark.parametrize("view", ["captured", "replayed"])
def test_chains_100000_deep_on_both_sides_of_the_marker(view):
    depth = 100_000
    root = Node("ROOT", False, {})
    replay_end = _chain(root, [f"r{i}" for i in range(depth)])
    marker = Node(CAPTURED, False, {})
    replay_end.adopt(marker)
    capture_end = _chain(marker, [f"c{i}" for i in range(depth)])
    capture_end.adopt(Node("k", True, {"time (ns)": 7, "count": 100}))
    replay_end.adopt(Node("eager", True, {"time (ns)": 1, "count": 1}))
    assert apply_graph_view(root, view) == 1
    paths = _paths(root)
    if view == "captured":
        assert paths[tuple(f"c{i}" for i in range(depth)) + ("k",)] == (7, 100)
    else:
        assert paths[tuple(f"r{i}" for i in range(depth)) + ("k",)] == (7, 100)
    assert paths[tuple(f"r{i}" for i in range(depth)) + ("eager",)] == (1, 1)
    assert _totals(root) == (8, 101)


def test_the_viewer_prints_each_view(viewer, tree_path):
    outputs = {}
    for view in ("nested", "captured", "replayed"):
        status, out, err = viewer("--graph-view", view, "-m", "time/ns,count", tree_path)
        assert (status, err) == (0, "")
        outputs[view] = out
    assert outputs["nested"] == viewer("-m", "time/ns,count", tree_path)[1]  # the default
    assert CAPTURED in outputs["nested"] and CAPTURED not in outputs["captured"] + outputs["replayed"]
    root_line = [line for line in outputs["captured"].splitlines() if line.endswith("ROOT")][0]
    assert root_line.split()[:2] == ["199", "29"]
    assert "step2" not in outputs["captured"] and "step2" in outputs["replayed"]
    status, _, err = viewer("--graph-view", "sideways", tree_path)
    assert status == 2 and "invalid choice" in err


def test_read_takes_the_view(tree_path):
    profile = read(tree_path, metrics="time/ns,count", graph_view="captured")
    assert profile.node(["model", "k2"]).value("count") == 16
    assert profile.root.value("time/ns") == 199
    nested = read(tree_path, metrics="count")
    assert nested.node(["step2", CAPTURED, "model", "k2"]).value("count") == 5
    replayed = read(tree_path, metrics="count", graph_view="replayed")
    assert replayed.node(["decode", "k2"]).value("count") == 10
    with pytest.raises(ViewerError, match="nested, captured, replayed"):
        read(tree_path, graph_view="flat")


def test_rank_files_are_each_viewed_before_they_are_merged(write_profile):
    paths = [write_profile(_tree(), f"run.rank{r}.hatchet") for r in (0, 1)]
    merged = merge_files([(p, r) for r, p in enumerate(paths)], ["count"], workers=1, graph_view="replayed")
    root, row_of = merged.tree()
    decode = root.children["decode"]
    assert CAPTURED not in decode.children
    assert merged.per_rank["count"][row_of[decode.children["k2"]]].tolist() == [10, 10]


def test_the_html_report_shows_the_chosen_view(viewer, tree_path, tmp_path):
    marker = "\\u003ccaptured_at\\u003e"  # as the page's embedded JSON spells it
    out = tmp_path / "r.html"
    status, _, err = viewer("--html", out, tree_path)
    assert status == 0, err
    assert marker in out.read_text()  # nested, the default
    status, _, err = viewer("--graph-view", "captured", "--html", out, tree_path)
    assert status == 0, err
    page = out.read_text()
    assert marker not in page and "step2" not in page and "(--graph-view captured)" in page
