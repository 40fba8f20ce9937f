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
import os
import re

from ..distributed.ranks import losses
from .errors import ViewerError
from .metrics import CPU_TIME, FLOP_KEYS, MEASURED_BYTES, TIME, Metric, bind, parse_metrics, prepare, \
    usable_specs
from .options import metric_specs, parse_depth, parse_threshold, selection
from .pipeline import filter_tree, refuse_empty
from .profile_tree import Profile, compute_inclusive, preorder, release
from .rank_merge import expand_inputs, is_rank_file, merge_files, meta_key, metadata_of, np, rank_of
from .render import View, render_metric_list, render_sorted, render_tree, use_color

SUFFIXES = ("max", "min", "mean", "imbalance", "slowest")


def split_spec(spec):
    """'time/ms:max' -> ('time/ms', 'max'); specs without a rank suffix -> (spec, None)."""
    base, colon, suffix = spec.rpartition(":")
    return (base, suffix) if colon and suffix in SUFFIXES else (spec, None)


def handles(args):
    """True when the viewer's inputs call for a rank merge: a folder, a .rank<r> file, or a
    metric with a rank suffix."""
    if any(os.path.isdir(p) or is_rank_file(p) for p in args.profiles):
        return True
    return any(split_spec(spec)[1] for spec in metric_specs(args.metrics))


def keys_for(base):
    """Stored metrics a spec may read (a superset is harmless; specs are checked after the fold)."""
    family = base.split("/", 1)[0]
    if family in ("time", "avg_time"):
        return [TIME, "count"] if family == "avg_time" else [TIME]
    if family == "cpu_time":
        return [CPU_TIME]
    flops = list(FLOP_KEYS.values())
    if base.endswith("flop/s") or re.match(r"^[kmgtp]?flop(8|16|32|64)/s$", base):
        return [TIME] + flops
    if re.match(r"^[kmgtp]?byte/s$", base):
        return [TIME, "bytes"]
    if base == "util":
        return [TIME, "bytes"] + flops + list(MEASURED_BYTES)
    return [base]


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
        compute = metric.make({key: at for at, key in enumerate(metric.needs)})
        matrices = [self.inclusive.get(key) for key in metric.needs]
        out = np.full(len(self.merge.ranks), np.nan)
        for column in range(len(out)):
            incl = [None if m is None else float(m[row, column]) for m in matrices]
            total = [None if m is None else float(m[root_row, column]) for m in matrices]
            value = compute(incl, total)
            out[column] = np.nan if value is None else value
        return out

    def statistic(self, metric, suffix, merged):
        """The column's value function; `merged(node)` is the metric over the summed tree."""
        ranks = self.merge.ranks

        def compute(node):
            if merged(node) is None:
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


def load(paths):
    """(path, rank, metadata) for every input file (folders expanded)."""
    files = []
    for path in expand_inputs(paths):
        meta = metadata_of(path)
        files.append((path, rank_of(path, meta), meta))
    return files


def losses_text(files):
    """A line per rank with losses, and the total; 'no records lost' when there are none."""
    per_rank, total = losses((rank, meta_key(path), meta) for path, rank, meta in files)
    ranks = sorted(per_rank)
    head = f"ranks: {len(ranks)} ({_rank_ranges(ranks)}) from {len(files)} file{'s' if len(files) > 1 else ''}"
    lossy = [(r, c) for r, c in sorted(per_rank.items()) if any(c.values())]
    if not lossy:
        return head + "; no records lost\n"
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


def _merged_profile(specs, paths, graph_view):
    """(Profile of the tree summed over ranks, its RankMerge, node -> row, the files)."""
    files = load(paths)
    keys = [k for s in specs for k in keys_for(split_spec(s)[0])]  # plain columns read the sums
    merge = merge_files([(p, r) for p, r, _ in files], keys, graph_view=graph_view)
    root, row_of = merge.tree()
    profile = Profile(root, merge.device_info, [p for p, _, _ in files], merge.metric_names)
    profile.has_metadata = merge.has_metadata
    return profile, merge, row_of, files


def _value_functions(columns, merge, root, row_of):
    """(shown Metric, value function of a node) per column, once the tree's sums are in."""
    bases = [m for _, m, _ in columns]
    keys, _ = bind(bases)
    index = {key: at for at, key in enumerate(keys)}
    compute_inclusive(root, keys, drop_metrics=True)
    per_rank = RankColumns(merge, root, row_of)
    out = []
    for spec, metric, suffix in columns:
        summed = metric.make(index)
        only_kernels = metric.kernels_only

        def merged(node, summed=summed, only_kernels=only_kernels):
            return None if only_kernels and not node.kernel else summed(node.incl, root.incl)

        if suffix is None:
            out.append((metric, merged))
        else:
            integral = suffix == "slowest" or (metric.integral and suffix in ("max", "min"))
            out.append((Metric(spec, None, metric.needs, integral=integral),
                        per_rank.statistic(metric, suffix, merged)))
    return out


def run(args, write, stream=None, release_trees=True):
    """The viewer pipeline for a rank merge (cli.run's branch for it), writing through `write`."""
    if args.diff_profile is not None:
        raise ViewerError("--diff-profile compares two profiles; it does not combine with a rank merge")
    depth, threshold = parse_depth(args.depth), parse_threshold(args.threshold)
    chosen = selection(args)
    specs = _with_slowest(metric_specs(args.metrics))
    profile, merge, row_of, files = _merged_profile(specs, args.profiles, chosen.graph_view)
    root = profile.root
    if args.list:
        render_metric_list(profile, profile.names, usable_specs(profile.names, profile.device_info), write)
        return write("Per-rank statistics: append :max, :min, :mean, :imbalance or :slowest to a metric\n")
    refuse_empty(profile)
    columns = _columns(specs, profile)
    filter_tree(profile, chosen)
    prepare([m for _, m, _ in columns], root, profile.device_info)
    shown = _value_functions(columns, merge, root, row_of)
    functions = [f for _, f in shown]

    def values_of(node):
        if node.values is None:
            node.values = [f(node) for f in functions]
        return node.values

    view = View([m for m, _ in shown], values_of, depth=depth, threshold=threshold, frame_format=args.format,
                color=use_color(stream, args.no_color), scientific=args.sci)
    try:
        (render_sorted if args.print_sorted else render_tree)(root, view, write)
        write(losses_text(files))
    finally:
        if release_trees:
            release(root)


def merge_traces_command(args, write):
    """--merge-traces OUT: the positional files are Chrome traces, merged into one timeline."""
    # orjson, uuid and zoneinfo come with it: paid only by --merge-traces
    from ..distributed.merge_traces import TraceMergeError, merge_traces, summary_line  # deferred: see above

    try:
        write(summary_line(merge_traces(args.profiles, args.merge_traces), args.merge_traces))
    except (TraceMergeError, OSError) as error:
        raise ViewerError(str(error)) from None
