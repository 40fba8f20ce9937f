"""``--diff-profile``: a union tree whose values are (this - other) per node.

Nodes are matched by their path of names; a node present on one side only
counts the other side as zero. Values are differences of the displayed
metrics (so ``time/%`` compares shares, ``tflop16/s`` compares rates).
"""

from .nodes import Node


def _diff_values(a_vals, b_vals):
    if a_vals is None:
        return [None if b is None else -b for b in b_vals]
    if b_vals is None:
        return list(a_vals)
    return [None if a is None and b is None else (a or 0) - (b or 0)
            for a, b in zip(a_vals, b_vals)]


def _pair_node(name, a, b, parent, values_a, values_b):
    source = a if a is not None else b
    node = Node(name, source.kernel, source.metrics)
    if parent is not None:
        parent.adopt(node)
    node.values = _diff_values(
        None if a is None else values_a(a), None if b is None else values_b(b)
    )
    return node


def diff_tree(a_root, b_root, values_a, values_b):
    """Build the union tree of two roots with difference values attached."""
    root = _pair_node(a_root.name, a_root, b_root, None, values_a, values_b)
    stack = [(root, a_root, b_root)]
    while stack:
        node, a, b = stack.pop()
        a_kids = a.children if a is not None else {}
        b_kids = b.children if b is not None else {}
        names = list(a_kids) + [n for n in b_kids if n not in a_kids]
        for name in names:
            ca, cb = a_kids.get(name), b_kids.get(name)
            child = _pair_node(name, ca, cb, node, values_a, values_b)
            stack.append((child, ca, cb))
    return root
