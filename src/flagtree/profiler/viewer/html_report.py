"""``--html``: one self-contained HTML report (flame view, table, diff) for a tree profile.

The page carries its script, style and data inline and reaches nothing outside itself (a
Content-Security-Policy forbids it), so it works from ``file://`` and offline. The tree travels
as compact JSON (columns of numbers plus one string table) drawn on a canvas by report.js.
"""

import json
import sys

from .. import progress
from .diff import diff_tree
from .errors import ViewerError
from .flame import write_atomic
from .graph_view import DEFAULT_GRAPH_VIEW
from .metrics import CPU_TIME, FLOP_KEYS, TIME, usable_specs
from .options import metric_specs, parse_depth, parse_threshold
from .profile_tree import IDENTIFIERS, release
from .render import View, render_tree
from .report_data import build_payload, embed_json
from .report_changes import biggest_changes
from .report_summary import summary, timeline_beside
from .report_timeline import load_run_trace, timeline_payload
from ..common.safe_text import safe

MAX_TABLE_ROWS = 2000
GRAPH_VIEW_FACTS = {"captured": "replayed kernels shown under their capture path only (--graph-view captured)",
                    "replayed": "replayed kernels shown under their replay context only (--graph-view replayed)"}
_ASSETS = ("report.html", "report.css", "report.js", "timeline.js")


def _asset(name):
    from importlib import resources  # deferred: its imports are paid only when a report is written

    return resources.files(__package__).joinpath("report", name).read_text(encoding="utf-8")


def report_specs(profile):
    """The metrics the report offers for this profile, as payload entries in menu order.

    Entries with ``derive`` are rates the page computes from embedded columns (sum of
    ``num`` columns / time); the others are columns of viewer-computed inclusive values."""
    names, usable = profile.names, set(usable_specs(profile.names, profile.device_info))
    entry = lambda spec, label, unit, additive: {"id": spec, "label": label, "unit": unit, "additive": additive}
    out = []
    if "time/ns" in usable:
        out.append(entry("time/ns", "time", "ns", True))
    if "count" in names:
        out.append(entry("count", "count", "", True))
    flops = [key for key in FLOP_KEYS.values() if key in names]
    if "flop/s" in usable and flops:
        out.append(dict(entry("flop/s", "FLOP/s", "FLOP/s", False), derive={"num": flops, "den": "time/ns"}))
    if "byte/s" in usable:
        out.append(dict(entry("byte/s", "bytes/s", "B/s", False), derive={"num": ["bytes"], "den": "time/ns"}))
    if "util" in usable:
        out.append(entry("util", "util", "ratio", False))
    if "cpu_time/ns" in usable:
        out.append(entry("cpu_time/ns", "CPU time", "ns", True))
    shown = {"count", TIME, CPU_TIME}
    for name in sorted(names):
        if name not in IDENTIFIERS and name not in shown and not name.startswith("__"):
            out.append(entry(name, name, "B" if name == "bytes" else "", True))
    return out


def menu_id(spec):
    """The report menu entry that shows the first -m metric (time/ms is the 'time' entry)."""
    for family in ("time", "cpu_time"):
        if spec == family or spec.startswith(family + "/") and spec != "time/%":
            return family + "/ns"
    if "flop" in spec and spec.endswith("/s"):  # tflop16/s and friends: the FLOP/s entry
        return "flop/s"
    if spec.endswith("byte/s"):
        return "byte/s"
    return spec


def column_specs(specs):
    """The entries the viewer computes (derived rates are left to the page)."""
    return [s for s in specs if "derive" not in s]


def _common_specs(profile, other):
    specs = report_specs(profile)
    if other is None:
        return specs
    theirs = {s["id"] for s in report_specs(other)}
    return [s for s in specs if s["id"] in theirs]


def _raw_tree(path):
    """The file's root object decoded whole, or None where the stdlib decoder cannot take it
    (nested deeper than its recursion limit: such a report shows no launch metadata)."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
    except OSError as exc:
        raise ViewerError(f"cannot read profile '{path}': {exc.strerror or exc}") from None
    except (RecursionError, ValueError):
        return None  # ValueError: the viewer's reader accepted it, so only a decoder limit
    if type(data) is not list or not data or type(data[0]) is not dict:
        return None
    return data[0]


def kernel_metadata(paths, roots):
    """{Node: launch metadata (grid, block, registers, shared memory)} read from the files.

    The viewer's Node keeps name, kernel flag and metrics only, so the raw files are walked
    once more, alongside the loaded tree (same-named siblings merged there: the first
    metadata wins)."""
    found = {}
    for path, root in zip(paths, roots):
        raw_root = _raw_tree(path)
        stack = [(raw_root, root)] if raw_root is not None else []
        while stack:
            raw, node = stack.pop()
            children = raw.get("children")
            # The file may have been replaced since the tree was loaded: take only what fits.
            for raw_child in children if type(children) is list else ():
                frame = raw_child.get("frame") if type(raw_child) is dict else None
                name = frame.get("name") if type(frame) is dict else None
                child = node.children.get(name) if type(name) is str else None
                if child is None:
                    continue
                meta = raw_child.get("metadata")
                if type(meta) is dict and child not in found:
                    found[child] = meta
                stack.append((raw_child, child))
    return found


def _table(args, profile, metrics, values_of, other, other_values):
    """The terminal viewer's output for the user's -m columns (no colour)."""
    count = len(metric_specs(args.metrics, profile.names))
    columns = lambda node: values_of(node)[:count]
    root = profile.root
    diff = other is not None
    if diff:
        root = diff_tree(root, other.root, columns, lambda node: other_values(node)[:count])
        columns = lambda node: node.values
    view = View(metrics[:count], columns, depth=parse_depth(args.depth),
                threshold=parse_threshold(args.threshold), frame_format=args.format, diff=diff,
                scientific=getattr(args, "sci", False))
    parts = []
    try:
        render_tree(root, view, parts.append)
        return _cap_rows("".join(parts))
    finally:
        if diff:
            release(root)


def _cap_rows(text):
    """The first MAX_TABLE_ROWS rows: the whole table of a big profile would dwarf the tree."""
    lines = text.splitlines()
    if len(lines) <= MAX_TABLE_ROWS + 1:
        return text
    hidden = len(lines) - 1 - MAX_TABLE_ROWS
    note = f"... {hidden} more rows: run flagtree-profiler-viewer (or use -d / -t) for the whole table"
    return "\n".join(lines[:MAX_TABLE_ROWS + 1] + [note]) + "\n"


def build_report(source, args):
    """The finished HTML text for parsed viewer arguments."""
    profile = source.load(args.profiles)
    other = source.load([args.diff_profile]) if args.diff_profile else None
    specs = _common_specs(profile, other)
    user = metric_specs(args.metrics, profile.names)
    wanted = user + [s["id"] for s in column_specs(specs)]  # a list: names may hold commas
    # Read along the file's own paths, before --graph-view moves nodes: a moved kernel keeps it.
    meta = kernel_metadata(profile.sources, [profile.root] * len(profile.sources))
    progress.step("summing the tree")
    metrics, values_of = source.summed(profile, wanted)
    other_values = source.summed(other, wanted)[1] if other is not None else None
    try:
        table = _table(args, profile, metrics, values_of, other, other_values)
        payload = build_payload(profile, other, specs, len(user), values_of, other_values, meta)
        column = {spec["id"]: len(user) + at for at, spec in enumerate(column_specs(specs))}
        timeline = timeline_beside(profile.sources)
        progress.step(f"reading the timeline {timeline['file']}" if timeline else "building the page")
        events = load_run_trace(timeline, profile.sources)
        payload["summary"] = summary(profile, column, values_of, events, timeline)
        if payload["nonNumbers"]:  # said where the reader looks first: the icicle leaves them out
            payload["summary"]["facts"].append(
                ("not numbers", f"{payload['nonNumbers']:,} nodes hold values that are not numbers: left out of the widths"))
        view = getattr(args, "graph_view", DEFAULT_GRAPH_VIEW)
        if view != DEFAULT_GRAPH_VIEW:  # the page shows one view: say which
            payload["summary"]["facts"].append(("CUDA graphs", GRAPH_VIEW_FACTS[view]))
        if other is not None:  # a diff report opens with what changed most
            payload["summary"]["changes"] = biggest_changes(profile, other, column, values_of, other_values)
        payload["timeline"] = timeline_payload(events, timeline["file"]) if events is not None else None
        del events  # the payload holds what the page needs
        for label, text in payload["summary"]["facts"]:
            if label == "metadata":  # another run's metadata beside the profile: said, not used
                print(f"flagtree-profiler-viewer: note: {safe(text)}", file=sys.stderr)
        payload["table"] = table
        payload["title"] = profile.label
        payload["diffSource"] = args.diff_profile
        payload["initialMetric"] = menu_id(user[0])
    finally:
        release(profile.root)
        if other is not None:
            release(other.root)
    progress.step("writing the page")
    return assemble(payload)


def assemble(payload):
    template, css, script, timeline = (_asset(name) for name in _ASSETS)
    script += "\n" + timeline  # after report.js, whose window.__report it reads
    if "</script" in script.lower() or "</style" in css.lower():
        raise AssertionError("inline assets must not close their own element")
    head, rest = template.split("/*CSS*/", 1)
    middle, rest = rest.split("/*DATA*/", 1)
    before_js, tail = rest.split("/*JS*/", 1)
    return "".join((head, css, middle, embed_json(payload), before_js, script, tail))


def export(source, options, out_path):
    """The exporter (see :mod:`.exports`)."""
    write_atomic(out_path, build_report(source, options))
