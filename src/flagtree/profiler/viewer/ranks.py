"""One tree across ranks: ``flagtree-profiler-viewer run.rank*.hatchet`` (or a folder).

Files are read one at a time and folded into a merged tree by node path: each node holds the sum
over ranks of every metric (what plain columns show) and, for the metrics that rank columns
read, one value per rank (a float64 matrix: rows = merged nodes, columns = ranks). A metric spec
with a rank suffix shows a statistic over the ranks' own values of it:
  <m>:max  <m>:min  <m>:mean   over ranks (a rank that never reached a node counts as 0 there)
  <m>:imbalance                (max - mean) / mean: 0 when balanced, (ranks-1) when one rank does all
  <m>:slowest                  the rank holding the max (added after :max / :imbalance if not asked)
Parts of one rank (``.rank<r>.part<k>``) add into that rank. Losses recorded in each rank's
``.meta.json`` are listed per rank under the tree.
"""
import json
import os
import re

import numpy as np

from .errors import ViewerError
from .metrics import TIME, CPU_TIME, FLOP_KEYS, Metric, parse_metrics, prepare, usable_specs, needed_keys
from .profile_tree import IDENTIFIERS, Node, Profile, compute_inclusive, exclude, include, parse_json, \
    preorder, read_file, release

SUFFIXES = ("max", "min", "mean", "imbalance", "slowest")
_RANK_FILE = re.compile(r"\.rank(\d+)(?:\.part\d+)?\.hatchet$")
_PART = re.compile(r"(?:\.part\d+)?\.hatchet$")
_DEVICE_TYPES = {"HIP": 0, "CUDA": 1, "CPU": 2}  # Proton writes device identifiers as strings
LOSS_KEYS = ("lost_launches", "dropped_records")


def split_spec(spec):
    """'time/ms:max' -> ('time/ms', 'max'); specs without a rank suffix -> (spec, None)."""
    base, colon, suffix = spec.rpartition(":")
    return (base, suffix) if colon and suffix in SUFFIXES else (spec, None)


def handles(args):
    """True when the viewer's inputs call for a rank merge: a folder, a .rank<r> file, or a
    metric with a rank suffix."""
    if any(os.path.isdir(p) or _RANK_FILE.search(p) for p in args.profiles):
        return True
    return any(split_spec(s.strip())[1] for s in args.metrics.split(","))


def expand_inputs(paths):
    out = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".hatchet"))
            if not found:
                raise ViewerError(f"cannot read profile '{path}': a folder with no .hatchet profiles in it")
            out += found
        else:
            out.append(path)
    return out


def _metadata(path):
    try:
        with open(_PART.sub("", path) + ".meta.json") as handle:
            meta = json.load(handle)
        return meta if isinstance(meta, dict) else {}
    except (OSError, ValueError):
        return {}


def rank_of(path, meta):
    named = _RANK_FILE.search(path)
    if named:
        return int(named.group(1))
    return meta["rank"] if type(meta.get("rank")) is int else 0


def _keys_for(base):
    """Stored metrics a base spec reads (a superset is harmless; checked properly later)."""
    family = base.split("/", 1)[0]
    if family in ("time", "avg_time"):
        return [TIME, "count"] if family == "avg_time" else [TIME]
    if family == "cpu_time":
        return [CPU_TIME]
    if base.endswith("flop/s") or re.match(r"^[kmgtp]?flop(8|16|32|64)/s$", base):
        return [TIME] + list(FLOP_KEYS.values())
    if re.match(r"^[kmgtp]?byte/s$", base):
        return [TIME, "bytes"]
    return [base]


class RankMerge:
    """The streaming fold: merged nodes as flat columns (a parent's row precedes its children's)."""

    def __init__(self, ranks, keys):
        self.ranks = ranks
        self.column = {rank: c for c, rank in enumerate(ranks)}
        self.keys = list(dict.fromkeys(keys))
        self.index = {}  # (parent row, name) -> row
        self.names, self.frames, self.parents, self.metrics = [], [], [], []
        self.per_rank = {k: np.zeros((1024, len(ranks))) for k in self.keys}
        self.device_info, self.metric_names = {}, set()

    def add_file(self, path, rank):
        data = parse_json(read_file(path), path)
        if type(data) is not list or not data or len(data) > 2 or type(data[0]) is not dict:
            raise ViewerError(f"'{path}' is not a tree profile: expected a JSON list [root, device_info]")
        self._add_devices(data[1] if len(data) == 2 else {}, path)
        rows = {k: [] for k in self.keys}
        values = {k: [] for k in self.keys}
        stack = [(data[0], -1)]
        while stack:
            raw, parent = stack.pop()
            row = self._row(raw, parent, path)
            metrics = self._add_metrics(row, raw.get("metrics", {}), path)
            for key in self.keys:
                value = metrics.get(key)
                if value is not None:
                    rows[key].append(row)
                    values[key].append(value)
            children = raw.get("children", [])
            if type(children) is not list:
                raise ViewerError(f"'{path}' is not a tree profile: a node's children is not a list")
            stack.extend((child, row) for child in children)
        self._grow(len(self.names))
        column = self.column[rank]
        for key in self.keys:
            np.add.at(self.per_rank[key][:, column], rows[key], values[key])

    def _row(self, raw, parent, path):
        if type(raw) is not dict:
            raise ViewerError(f"'{path}' is not a tree profile: a node is not a JSON object")
        frame = raw.get("frame")
        if type(frame) is not dict or type(frame.get("name")) is not str:
            raise ViewerError(f"'{path}' is not a tree profile: a node has no frame name")
        key = (parent, frame["name"] if parent >= 0 else None)  # every file's root is row 0
        row = self.index.get(key)
        if row is None:
            row = self.index[key] = len(self.names)
            self.names.append(frame["name"])
            self.frames.append(frame)
            self.parents.append(parent)
            self.metrics.append({})
        return row

    def _add_metrics(self, row, metrics, path):
        if type(metrics) is not dict:
            raise ViewerError(f"'{path}' is not a tree profile: a node has non-object metrics")
        merged = self.metrics[row]
        for key, value in metrics.items():
            if key in IDENTIFIERS:
                merged.setdefault(key, _identifier(key, value, path))
            elif type(value) in (int, float):
                merged[key] = merged.get(key, 0) + value
            else:
                raise ViewerError(f"'{path}' is not a tree profile: metric '{key}' is not a number")
        self.metric_names.update(metrics)
        return metrics

    def _add_devices(self, device_info, path):
        if type(device_info) is not dict:
            raise ViewerError(f"'{path}' is not a tree profile: device_info is not an object")
        for kind, devices in device_info.items():
            if isinstance(devices, dict) and isinstance(self.device_info.get(kind), dict):
                self.device_info[kind] = {**devices, **self.device_info[kind]}
            else:
                self.device_info.setdefault(kind, devices)

    def _grow(self, rows):
        for key, matrix in self.per_rank.items():
            if matrix.shape[0] < rows:
                bigger = np.zeros((max(rows, 2 * matrix.shape[0]), matrix.shape[1]))
                bigger[: matrix.shape[0]] = matrix
                self.per_rank[key] = bigger

    def tree(self):
        """The merged tree as viewer Nodes, and each node's row."""
        nodes = []
        for name, frame, parent, metrics in zip(self.names, self.frames, self.parents, self.metrics):
            node = Node(name, frame, metrics, nodes[parent] if parent >= 0 else None)
            if parent >= 0:
                nodes[parent].children[name] = node
            nodes.append(node)
        return nodes[0], {node: row for row, node in enumerate(nodes)}


def _identifier(key, value, path):
    if type(value) is str:
        if key == "device_type" and value.upper() in _DEVICE_TYPES:
            return _DEVICE_TYPES[value.upper()]
        if key == "device_id" and value.isdigit():
            return int(value)
        raise ViewerError(f"'{path}' is not a tree profile: metric '{key}' is not a device identifier: {value!r}")
    return value


# --- columns: statistics over the ranks' own values ---

_SCALED = re.compile(r"^(time|cpu_time)/(s|ms|us|ns)$")
_SCALES = {"s": 1e-9, "ms": 1e-6, "us": 1e-3, "ns": 1.0}


class RankColumns:
    """Per-rank inclusive values of the merged tree, and the value function of each column."""

    def __init__(self, merge, root, row_of):
        self.merge, self.root, self.row_of = merge, root, row_of
        order = preorder(root)  # the nodes that survived -i/-e
        self.inclusive = {}
        for key, matrix in merge.per_rank.items():
            incl = np.zeros_like(matrix)
            rows = [row_of[n] for n in order]
            incl[rows] = matrix[rows]
            for node in reversed(order):
                if node.parent is not None:
                    incl[row_of[node.parent]] += incl[row_of[node]]
            self.inclusive[key] = incl

    def per_rank(self, metric, node):
        """The metric's value in every rank at this node (NaN where it has none)."""
        row, root_row = self.row_of[node], self.row_of[self.root]
        scaled = _SCALED.match(metric.label)
        if scaled or metric.label in self.inclusive:
            key = metric.needs[0]
            return self.inclusive[key][row] * (_SCALES[scaled.group(2)] if scaled else 1.0)
        if metric.label == "time/%":
            with np.errstate(divide="ignore", invalid="ignore"):
                return 100.0 * self.inclusive[TIME][row] / self.inclusive[TIME][root_row]
        out = np.full(len(self.merge.ranks), np.nan)
        for column in range(len(out)):
            incl = {k: self.inclusive[k][row, column] for k in metric.needs if k in self.inclusive}
            total = {k: self.inclusive[k][root_row, column] for k in metric.needs if k in self.inclusive}
            value = metric.compute(incl, total)
            out[column] = np.nan if value is None else value
        return out

    def statistic(self, metric, suffix):
        ranks = self.merge.ranks

        def compute(node):
            if metric.compute(node.incl, self.root.incl) is None:
                return None  # no rank has this metric here
            values = self.per_rank(metric, node)
            present = ~np.isnan(values)
            if not present.any():
                return None
            kept = values[present]
            if suffix == "slowest":
                return ranks[int(np.flatnonzero(present)[np.argmax(kept)])]
            mean = float(kept.mean())
            if suffix == "imbalance":
                return (float(kept.max()) - mean) / mean if mean else None
            return {"max": float(kept.max()), "min": float(kept.min()), "mean": mean}[suffix]

        return compute


def _with_slowest(specs):
    """Adds <m>:slowest after the first :max or :imbalance column of each <m> that lacks one."""
    out = list(specs)
    for spec in specs:
        base, suffix = split_spec(spec)
        if suffix in ("max", "imbalance") and f"{base}:slowest" not in out:
            out.insert(out.index(spec) + 1, f"{base}:slowest")
    return out


def _columns(specs, profile):
    """(plain Metric or None, base Metric, suffix) per column, checked against the merged names."""
    columns = []
    for spec in specs:
        base, suffix = split_spec(spec)
        if suffix and base == "util":
            raise ViewerError(f"metric '{spec}': '{base}' has no per-rank form (it needs device peaks); "
                              f"show '{base}' of the merged tree instead")
        (metric,) = parse_metrics(base, profile.names, profile.device_info, profile.label)
        columns.append((spec, metric, suffix))
    return columns


def _load(paths):
    files = []
    for path in expand_inputs(paths):
        meta = _metadata(path)
        files.append((path, rank_of(path, meta), meta))
    return files


def merge_files(files, keys):
    """Folds the files, one at a time, into a RankMerge over their ranks."""
    merge = RankMerge(sorted({rank for _, rank, _ in files}), keys)
    for path, rank, _ in files:
        merge.add_file(path, rank)
    return merge


def losses_text(files):
    """A line per rank with losses, and the total; 'no records lost' when there are none."""
    per_rank, seen = {}, set()
    for path, rank, meta in files:
        counts = per_rank.setdefault(rank, dict.fromkeys(LOSS_KEYS, 0))
        key = _PART.sub("", path)  # parts of one rank share its metadata file
        if key in seen:
            continue
        seen.add(key)
        for k in LOSS_KEYS:
            counts[k] += int(meta.get(k) or 0) if type(meta.get(k)) in (int, float) else 0
    ranks = sorted(per_rank)
    head = f"ranks: {len(ranks)} ({_rank_ranges(ranks)}) from {len(files)} file{'s' if len(files) > 1 else ''}"
    lossy = [(r, c) for r, c in sorted(per_rank.items()) if any(c.values())]
    if not lossy:
        return head + "; no records lost\n"
    total = {k: sum(c[k] for c in per_rank.values()) for k in LOSS_KEYS}
    lines = [head + "; records lost:"]
    lines += [f"  rank {r}: {c['lost_launches']} lost launches, {c['dropped_records']} dropped records" for r, c in lossy]
    lines.append(f"  total: {total['lost_launches']} lost launches, {total['dropped_records']} dropped records")
    return "\n".join(lines) + "\n"


def _rank_ranges(ranks):
    spans, start = [], None
    for r in ranks + [None]:
        if start is not None and (r is None or r != prev + 1):
            spans.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = None
        if r is not None and start is None:
            start = r
        prev = r
    return ",".join(spans)


def run(args, stream):
    """The viewer pipeline for a rank merge; returns the text to print."""
    from . import cli  # the plain viewer's option parsing and rendering, shared
    from .render import View, render_metric_list, render_sorted, render_tree, use_color

    if args.diff_profile is not None:
        raise ViewerError("--diff-profile compares two profiles; it does not combine with a rank merge")
    depth, threshold = cli._parse_depth(args.depth), cli._parse_threshold(args.threshold)
    include_rx, exclude_rx = cli._compile("--include", args.include), cli._compile("--exclude", args.exclude)
    specs = _with_slowest([s.strip() for s in args.metrics.split(",")])
    files = _load(args.profiles)
    keys = [k for s in specs if split_spec(s)[1] for k in _keys_for(split_spec(s)[0])]
    merge = merge_files(files, keys)
    root, row_of = merge.tree()
    profile = Profile(root, merge.device_info, [p for p, _, _ in files], merge.metric_names)
    if args.list:
        text = render_metric_list(profile, profile.names, usable_specs(profile.names, profile.device_info))
        return text + "Per-rank statistics: append :max, :min, :mean, :imbalance or :slowest to a metric\n"
    columns = _columns(specs, profile)
    if exclude_rx is not None:
        exclude(root, exclude_rx)
    if include_rx is not None:
        include(root, include_rx)
    bases = [m for _, m, _ in columns]
    prepare(bases, root, profile.device_info)
    compute_inclusive(root, needed_keys(bases))
    per_rank = RankColumns(merge, root, row_of)
    shown, value_functions = [], []
    for spec, metric, suffix in columns:
        if suffix is None:
            shown.append(metric)
            value_functions.append(lambda node, m=metric: m.compute(node.incl, root.incl))
        else:
            shown.append(Metric(spec, None, metric.needs, integral=suffix == "slowest" or
                                (metric.integral and suffix in ("max", "min"))))
            value_functions.append(per_rank.statistic(metric, suffix))

    def values_of(node):
        if node.values is None:
            node.values = [f(node) for f in value_functions]
        return node.values

    view = View(shown, values_of, depth=depth, threshold=threshold, frame_format=args.format,
                color=use_color(stream, args.no_color))
    try:
        render = render_sorted if args.print_sorted else render_tree
        return render(root, view) + losses_text(files)
    finally:
        release(root)


def merge_traces_command(args):
    """--merge-traces OUT: the positional files are Chrome traces, merged into one timeline."""
    from ..merge_traces import TraceMergeError, merge_traces, summary_line

    try:
        return summary_line(merge_traces(args.profiles, args.merge_traces), args.merge_traces)
    except (TraceMergeError, OSError) as error:
        raise ViewerError(str(error)) from None
