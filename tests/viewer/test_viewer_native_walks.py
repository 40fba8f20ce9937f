"""The native tree walks (csrc/viewer/tree_walks.cpp) agree with their Python twins.

``viewer_inclusive`` must leave every node exactly what profile_tree.compute_inclusive leaves
(the same sums, of the same types, from the same additions), and ``viewer_tree_rows`` must
give render.tree_rows's rows; for a tree either one does not take, it returns None and
changes nothing. Trees here are random and have the awkward values: ties, None, NaN, -0.0,
ints beside floats, huge ints.
"""

import math
import random

import pytest

from flagtree.profiler.viewer import profile_tree, render
from flagtree.profiler.viewer.nodes import NO_CHILDREN, NO_METRICS, Node, stored_values
from flagtree.profiler.viewer.render import View

INCLUSIVE = profile_tree.NATIVE_INCLUSIVE
ROWS = render.NATIVE_ROWS
native = pytest.mark.skipif(INCLUSIVE is None or ROWS is None, reason="native core not built")

KEYS = ["time (ns)", "count", "bytes"]
AWKWARD = [None, 0, 0.0, -0.0, 1, 1.0, 2.5, -3, float("nan"), float("inf"), 7, 7.0, 10**18,
           (1 << 62) + 1, 1e-300, 3.25, -2.5]


def _random_tree(rng, size, awkward_values=True):
    root = Node("ROOT", False, {})
    nodes = [root]
    for index in range(1, size):
        parent = rng.choice(nodes[-20:] if rng.random() < 0.5 else nodes)
        metrics = {}
        for key in KEYS:
            if rng.random() < 0.6:
                metrics[key] = rng.choice(AWKWARD[1:]) if awkward_values and rng.random() < 0.3 \
                    else rng.choice([rng.randint(0, 9), rng.randint(0, 10**6), rng.random() * 100])
        name = rng.choice(["a", "b", "c", "k", f"n{index}", "\u00e9", "Z"]) + str(index % 3)
        if name in parent.children:
            name = f"{name}#{index}"
        child = Node(name, rng.random() < 0.5, metrics)
        parent.adopt(child)
        nodes.append(child)
    return root


def _copy(root):
    """The same tree, made again (metrics copied): one for each path."""
    twin = Node(root.name, root.kernel, dict(root.metrics))
    stack = [(root, twin)]
    while stack:
        node, made = stack.pop()
        for child in node.children.values():
            copy = Node(child.name, child.kernel, dict(child.metrics))
            made.adopt(copy)
            stack.append((child, copy))
    return twin


def _same(a, b):
    """Equal numbers of the same type (NaN equal to NaN, -0.0 not equal to 0.0)."""
    if a is None or b is None:
        return a is b
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def _snapshot(order):
    return [(n.name, list(n.incl) if n.incl is not None else None,
             n.metrics is NO_METRICS, dict(n.metrics)) for n in order]


def _same_snapshots(one, two):
    assert len(one) == len(two)
    for (name_a, incl_a, dropped_a, metrics_a), (name_b, incl_b, dropped_b, metrics_b) in zip(one, two):
        assert name_a == name_b and dropped_a == dropped_b
        assert metrics_a.keys() == metrics_b.keys()
        assert (incl_a is None) == (incl_b is None)
        if incl_a is not None:
            assert len(incl_a) == len(incl_b)
            assert all(_same(a, b) for a, b in zip(incl_a, incl_b)), (name_a, incl_a, incl_b)


@native
@pytest.mark.parametrize("seed", range(12))
def test_native_sums_are_the_python_sums(monkeypatch, seed):
    rng = random.Random(seed)
    root = _random_tree(rng, rng.choice([1, 2, 30, 400]))
    for keys in (["time (ns)"], KEYS, ["count", "missing"], []):
        for drop in (False, True):
            fast_root, slow_root = _copy(root), _copy(root)
            fast = profile_tree.compute_inclusive(fast_root, keys, drop_metrics=drop)
            with monkeypatch.context() as patch:
                patch.setattr(profile_tree, "NATIVE_INCLUSIVE", None)
                slow = profile_tree.compute_inclusive(slow_root, keys, drop_metrics=drop)
            assert [n.name for n in fast] == [n.name for n in slow]
            assert fast[0] is fast_root
            _same_snapshots(_snapshot(fast), _snapshot(slow))


@native
def test_native_sums_leave_unusual_trees_untouched():
    class Other(Node):
        __slots__ = ()

    for spoil in ("child class", "children proxy", "metrics proxy", "metrics list", "key not str"):
        root = _random_tree(random.Random(5), 50)
        victim = list(root.children.values())[0]
        keys = ["time (ns)"]
        if spoil == "child class":
            other = Other("x", False, {})
            victim.adopt(other)
        elif spoil == "children proxy":
            from types import MappingProxyType
            victim.children = MappingProxyType(dict(victim.children) or {"y": Node("y", False, {})})
        elif spoil == "metrics proxy":
            from types import MappingProxyType
            victim.metrics = MappingProxyType({"time (ns)": 1})
        elif spoil == "metrics list":
            victim.metrics = [("time (ns)", 1)]
        else:
            keys = ["time (ns)", 3]
        before = _snapshot(profile_tree.preorder(root))
        assert INCLUSIVE(root, keys, True, Node, NO_METRICS) is None, spoil
        after = _snapshot(profile_tree.preorder(root))
        assert [s[:3] for s in before] == [s[:3] for s in after], spoil


def _set_values(root, rng, awkward):
    for node in profile_tree.preorder(root):
        pick = rng.choice(AWKWARD) if awkward else rng.choice([rng.randint(0, 5), rng.random()])
        node.values = (pick, "x") if rng.random() < 0.5 else [pick]


@native
@pytest.mark.parametrize("seed", range(16))
def test_native_rows_are_the_python_rows(monkeypatch, seed):
    rng = random.Random(100 + seed)
    root = _random_tree(rng, rng.choice([1, 3, 60, 500]))
    _set_values(root, rng, awkward=seed % 2 == 0)
    if seed % 4 == 0:
        root.values = (rng.choice([10, 10.0, 1e9]),)
    for depth in (None, 0, 1, 3, 1 << 62):
        for threshold in (0.0, 0.01, 0.5, 1.0):
            view = View([], stored_values, depth=depth, threshold=threshold)
            view.start(root)
            fast = ROWS(root, Node, view.depth, view.cutoff)
            assert fast is not None
            with monkeypatch.context() as patch:
                patch.setattr(render, "NATIVE_ROWS", None)
                slow = render.tree_rows(root, view)
            assert [n.name for n in fast[0]] == [n.name for n in slow[0]]
            assert all(a is b for a, b in zip(fast[0], slow[0]))
            assert fast[1:] == slow[1:] and fast[2] == slow[2]
            assert all(type(d) is int for d in fast[1]) and all(type(x) is bool for x in fast[2])


@native
def test_native_rows_sort_ties_like_python(monkeypatch):
    root = Node("ROOT", False, {})
    values = [1.0, 1, None, float("nan"), -0.0, 0, 0.0, 2, 2.0, None, float("nan"), 1e20, 10**20]
    for index, value in enumerate(values * 3):
        child = Node(f"{'ba'[index % 2]}{index % 5}-{index}", False, {})
        root.adopt(child)
        child.values = (value,)
    root.values = (5,)
    view = View([], stored_values)
    view.start(root)
    fast = ROWS(root, Node, None, None)
    monkeypatch.setattr(render, "NATIVE_ROWS", None)
    assert [n.name for n in fast[0]] == [n.name for n in render.tree_rows(root, view)[0]]


@native
def test_native_rows_leave_unusual_values_to_python():
    root = _random_tree(random.Random(9), 40, awkward_values=False)
    _set_values(root, random.Random(9), awkward=False)
    victim = list(root.children.values())[-1]
    for values in (None, (), ("1",), (True,), (1 + 2j,), "ab"):
        victim.values = values
        assert ROWS(root, Node, None, None) is None, values
    victim.values = (1.5,)
    assert ROWS(root, Node, None, None) is not None
    assert ROWS(root, Node, 2.0, None) is None  # a depth that is not an int
    assert ROWS(root, Node, None, 1) is None  # a cutoff that is not a float
    assert ROWS(root, dict, None, None) is None  # not the node class
    victim.children = {"x": object()}
    assert ROWS(root, Node, None, None) is None
    victim.children = NO_CHILDREN


@native
def test_native_walks_take_deep_chains():
    root = node = Node("ROOT", False, {"time (ns)": 1})
    for level in range(100_000):
        child = Node(f"s{level}", False, {"time (ns)": 1})
        node.adopt(child)
        node = child
    order = profile_tree.compute_inclusive(root, ["time (ns)"], drop_metrics=True)
    assert len(order) == 100_001 and root.incl == [100_001] and node.incl == [1]
    for each in order:
        each.values = tuple(each.incl)
    nodes, depths, lasts = ROWS(root, Node, None, None)
    assert len(nodes) == 100_001 and depths[-1] == 100_000 and all(lasts)
    profile_tree.release(root)
