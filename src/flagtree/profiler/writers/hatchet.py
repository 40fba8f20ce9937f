"""The tree output: `<name>.hatchet`, JSON in the literal layout that llnl-hatchet's
GraphFrame.from_literal reads (and Triton's proton-viewer): [root, device_info]."""
import json


def tree_literal(columns):
    """Nested node dicts from the native core's flat columns (parents precede children)."""
    from .. import _native

    kind_names = {int(kind): kind.name for kind in _native.NodeKind}  # the native numbering
    nodes = []
    for parent, kind, name, metrics, details in zip(columns["parent"], columns["kind"], columns["name"],
                                                    columns["metrics"], columns["details"]):
        node = {"frame": {"name": name, "type": "function", "kind": kind_names[kind]},
                "metrics": metrics, "children": []}
        if details:
            node["metadata"] = details
        if nodes:  # node 0 is the root
            nodes[parent]["children"].append(node)
        nodes.append(node)
    return nodes[0]


def prune_empty(root):
    """Drops the nodes with no metrics and nothing kept below them (the root stays): a periodic
    part keeps every node ever made, most of them empty since the previous part."""
    def keep(node):
        node["children"] = [c for c in node["children"] if keep(c)]
        return bool(node["metrics"] or node["children"])

    keep(root)
    return root


def write_tree(path, columns, device_info, prune=False):
    root = tree_literal(columns)
    if prune:
        prune_empty(root)
    with open(path, "w") as out:
        json.dump([root, device_info], out, separators=(",", ":"))
