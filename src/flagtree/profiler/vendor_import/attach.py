"""Putting matched vendor metrics on the profile's kernel nodes.

In process (the session is still open): through the extras join, ``session_attach`` by
correlation id, so the tree and the trace both get them; unmatched rows become nodes under
``ROOT/<unmatched vendor rows>/<source>/<name>`` (tree sessions; a trace has no place for a
launch that never happened, so there they are in vendor.json and the counts only).

After the run (the ``--ixkn`` wrapper): ixkn-cli owns the profiled process and its CSV exists
only once that process has written its profile, so the rows cannot join before that one write.
The same result is then applied to the written ``.hatchet`` (nodes found by their path) or
``.chrome_trace`` (events found by their correlation id), rewritten through writers/ (atomic).

Across launches of one kernel node, additive metrics (times, cycles, bytes, counts) are summed
and the others (ratios, rates, sizes per launch) averaged.
"""
import json
from collections import defaultdict

from .report import UNMATCHED_HOLDER
from ..writers.atomic import write_json
from ..writers.chrome_trace import write_chrome_trace
from ..native_core import native

_ADDITIVE_UNITS = {"ns", "us", "usecond", "ms", "msecond", "s", "second", "cycle", "cycles", "b", "byte",
                   "bytes", "kb", "kbyte", "mb", "mbyte", "gb", "gbyte", "inst", "instructions"}
_ADDITIVE_WORDS = ("time", "cycles", "bytes", "count", "duration", "instructions_executed")


def is_additive(metric):
    """Whether summing `metric` over launches means something (see the module doc)."""
    lowered = metric.lower()
    if lowered.endswith(")") and "(" in lowered:
        return lowered[lowered.rindex("(") + 1:-1].strip() in _ADDITIVE_UNITS
    return any(word in lowered for word in _ADDITIVE_WORDS) and "per" not in lowered and "ratio" not in lowered


def attach_in_session(slot, data, result):
    """Attaches a MatchResult to the open session in `slot` (data "tree" or "trace")."""
    mean = sorted({name for m in result.matches for name in m.row.metrics if not is_additive(name)})
    if mean:
        native.session.session_set_mean_metrics(slot, mean)
    for m in result.matches:
        metrics = list(m.row.metrics.items())
        if m.launch is not None:
            native.session.session_attach(slot, m.launch.correlation, metrics)
        elif data == "tree":
            native.session.session_add_held_row(slot, UNMATCHED_HOLDER, [m.row.source, m.row.name or "<no name>"],
                                                metrics)


# --- after the run: the written files -------------------------------------------------------

def _folded(result):
    """{launch: {metric: value}} with values folded per launch (a launch may have several rows)."""
    per_launch = defaultdict(dict)
    for m in result.matches:
        if m.launch is not None:
            per_launch[m.launch].update(m.row.metrics)
    return per_launch


def _combine(values_by_metric):
    return {name: (sum(values) if is_additive(name) else sum(values) / len(values))
            for name, values in values_by_metric.items()}


def attach_to_hatchet(path, result):
    """Adds the matched metrics to the kernel nodes of the tree file `path`; unmatched rows become
    nodes under ROOT/<unmatched vendor rows>. Returns how many launches found no node."""
    with open(path) as handle:
        document = json.load(handle)
    root = document[0]
    nodes = {}  # id(node) -> node
    values = defaultdict(lambda: defaultdict(list))  # id(node) -> metric -> one value per launch
    missing = 0
    found = {}  # path -> node (launches of one kernel node share it)
    for launch, metrics in _folded(result).items():
        if launch.path not in found:
            found[launch.path] = _find(root, launch.path)
        node = found[launch.path]
        if node is None:
            missing += 1
            continue
        nodes[id(node)] = node
        for name, value in metrics.items():
            values[id(node)][name].append(value)
    for key, by_metric in values.items():
        target = nodes[key]["metrics"]
        for name, value in _combine(by_metric).items():
            target[name] = target.get(name, 0) + value if is_additive(name) else value
    for m in result.matches:
        if m.launch is None:
            _hold(root, m.row)
    write_json(path, document, separators=(",", ":"))
    return missing


def _find(node, path):
    for kind, name in path:
        node = next((c for c in node["children"]
                     if c["frame"]["name"] == name and c["frame"].get("kind") == kind), None)
        if node is None:
            return None
    return node


def _child(node, name):
    for c in node["children"]:
        if c["frame"]["name"] == name and c["frame"].get("kind") == "scope":
            return c
    c = {"frame": {"name": name, "type": "function", "kind": "scope"}, "metrics": {}, "children": []}
    node["children"].append(c)
    return c


def _hold(root, row):
    node = root
    for name in (UNMATCHED_HOLDER, row.source, row.name or "<no name>"):
        node = _child(node, name)
    node["metrics"]["count"] = node["metrics"].get("count", 0) + 1
    for name, value in row.metrics.items():
        node["metrics"][name] = node["metrics"].get(name, 0) + value


def attach_to_trace(path, result):
    """Adds the matched metrics to the args of the trace events of their launch (by correlation)."""
    with open(path) as handle:
        document = json.load(handle)
    by_correlation = {launch.correlation: metrics for launch, metrics in _folded(result).items()}
    for event in document.get("traceEvents", ()):
        args = event.get("args")
        if isinstance(args, dict) and args.get("correlation") in by_correlation and event.get("ph") == "X":
            args.update(by_correlation[args["correlation"]])
    events = document.pop("traceEvents", [])
    document.pop("displayTimeUnit", None)
    write_chrome_trace(path, events, **document)
