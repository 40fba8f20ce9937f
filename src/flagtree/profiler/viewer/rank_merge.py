"""The streaming fold behind the cross-rank tree (viewer/ranks.py).

Files are read one at a time by the viewer's reader (profile_tree.load_profile: the same checks
and device-identifier handling as any profile); each of its nodes is found (or added) in a merged tree by its path, and
the values of the metrics the columns read go into one float64 matrix per metric: rows =
merged nodes, columns = ranks. Sums over ranks are row sums of those matrices, so no per-node
dictionaries are added up. With many files the fold is split over the cores (forked workers,
each folding a contiguous slice of the ranks) and the partial trees are joined by path.
"""
import json
import os

from ..paths import EXTENSIONS, METADATA_SUFFIX, output_stem, parse_output_name
from ..run_id import mismatch
from .errors import ViewerError
from .graph_view import DEFAULT_GRAPH_VIEW, apply_graph_view
from .nodes import IDENTIFIERS, Node
from .profile_tree import load_profile, merge_devices, release


class _LazyNumpy:
    """numpy, imported on first use: the viewer itself needs no third-party package, and only
    a rank merge pays for (and needs) numpy."""

    def __getattr__(self, name):
        try:
            import numpy  # deferred: only a rank merge needs numpy
        except ImportError:
            raise ViewerError("merging ranks needs numpy, which is not installed (pip install numpy)") from None
        return getattr(numpy, name)


np = _LazyNumpy()
FILES_PER_WORKER = 32  # below this a worker's start-up costs more than it saves


def _rank_match(path):
    name = parse_output_name(os.path.basename(path))
    return name if name and name.rank is not None and name.extension == EXTENSIONS["tree"] else None


def is_rank_file(path):
    return _rank_match(path) is not None


def expand_inputs(paths):
    """Files as given; a folder stands for the .hatchet profiles in it."""
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


def metadata_of(path):
    """The .meta.json written beside a profile (parts share their session's), or {}: also {}
    when it belongs to another run (see metadata_with_problem)."""
    return metadata_with_problem(path)[0]


def metadata_with_problem(path):
    """(the .meta.json beside a profile or {}, None or the sentence saying why it is not used:
    its run id is not the profile's, so another run wrote it under the same name)."""
    meta_path = output_stem(path) + METADATA_SUFFIX
    try:
        with open(meta_path) as handle:
            meta = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return {}, None
    if not isinstance(meta, dict):
        return {}, None
    problem = mismatch(path, meta, meta_path) if os.path.isfile(path) else None
    return ({}, problem) if problem else (meta, None)


def meta_key(path):
    return output_stem(path)


def rank_of(path, meta):
    named = _rank_match(path)
    if named:
        return named.rank
    return meta["rank"] if type(meta.get("rank")) is int else 0


class RankMerge:
    """Merged nodes as flat lists (a parent's row precedes its children's) and, per metric key,
    a (rows x ranks) matrix of exclusive values with a per-row presence flag. Files are read
    by the viewer's reader (profile_tree.load_profile), one at a time, and folded in."""

    def __init__(self, ranks, keys, graph_view=DEFAULT_GRAPH_VIEW):
        self.graph_view = graph_view  # applied to each file's tree before it is folded in
        self.ranks = list(ranks)
        self.column = {rank: c for c, rank in enumerate(self.ranks)}
        self.keys = list(dict.fromkeys(keys))
        self.index = {(-1, None): 0}  # (parent row, name) -> row; every file's root is row 0
        self.names, self.kernels, self.parents, self.idents = ["ROOT"], [False], [-1], [None]
        self.per_rank = {k: np.zeros((1024, len(self.ranks))) for k in self.keys}
        self.present = {k: np.zeros(1024, dtype=bool) for k in self.keys}
        self.device_info, self.metric_names, self.has_metadata = {}, set(), False

    def _new_row(self, key, name, kernel, parent):
        row = self.index[key] = len(self.names)
        self.names.append(name)
        self.kernels.append(kernel)
        self.parents.append(parent)
        self.idents.append(None)
        return row

    def add_file(self, path, rank):
        profile = load_profile(path)  # checked by the reader: numbers, identifiers, shape
        apply_graph_view(profile.root, self.graph_view)  # rows are made from the view's paths
        merge_devices(self.device_info, profile.device_info)
        self.metric_names |= profile.names
        self.has_metadata = self.has_metadata or profile.has_metadata
        found = {k: ([], []) for k in self.keys}
        readers = [(k, found[k][0].append, found[k][1].append) for k in self.keys]
        index, idents, kernels = self.index, self.idents, self.kernels
        self.names[0] = profile.root.name
        stack = [(profile.root, -1)]
        while stack:  # the hot loop: kept flat, no calls per node beyond dict lookups
            node, parent = stack.pop()
            row = index.get((parent, node.name)) if parent >= 0 else 0
            if row is None:
                row = self._new_row((parent, node.name), node.name, node.kernel, parent)
            elif node.kernel:
                kernels[row] = True
            metrics = node.metrics
            if metrics:
                for metric, add_row, add_value in readers:
                    value = metrics.get(metric)
                    if value is not None:
                        add_row(row)
                        add_value(value)
                if idents[row] is None and node.kernel:
                    idents[row] = {k: metrics[k] for k in IDENTIFIERS if k in metrics} or None
            if node.children:
                stack.extend([(child, row) for child in node.children.values()])
        release(profile.root)
        self._store(found, self.column[rank])

    def _store(self, found, column):
        self._grow(len(self.names))
        for key, (rows, values) in found.items():
            if rows:
                np.add.at(self.per_rank[key][:, column], rows, np.asarray(values, dtype=np.float64))
                self.present[key][rows] = True

    def _grow(self, rows):
        for key, matrix in self.per_rank.items():
            if matrix.shape[0] < rows:
                size = max(rows, 2 * matrix.shape[0])
                bigger = np.zeros((size, matrix.shape[1]))
                bigger[: matrix.shape[0]] = matrix
                self.per_rank[key] = bigger
                present = np.zeros(size, dtype=bool)
                present[: matrix.shape[0]] = self.present[key]
                self.present[key] = present

    def absorb(self, part, columns):
        """Joins a partial fold (of the ranks at `columns`) into this one by node path."""
        remap = [0] * len(part.names)
        for row in range(1, len(part.names)):
            parent = remap[part.parents[row]]
            key = (parent, part.names[row])
            mine = self.index.get(key)
            if mine is None:
                mine = self._new_row(key, part.names[row], part.kernels[row], parent)
            self.kernels[mine] = self.kernels[mine] or part.kernels[row]
            if self.idents[mine] is None:
                self.idents[mine] = part.idents[row]
            remap[row] = mine
        self._grow(len(self.names))
        rows = np.asarray(remap)
        for key in self.keys:
            self.per_rank[key][np.ix_(rows, columns)] += part.per_rank[key][: len(remap)]
            self.present[key][rows] |= part.present[key][: len(remap)]
        self.metric_names |= part.metric_names
        self.has_metadata = self.has_metadata or part.has_metadata
        merge_devices(self.device_info, part.device_info)

    def tree(self):
        """The merged tree as viewer Nodes (metrics: the sums over ranks), and each node's row."""
        count = len(self.names)
        sums = {k: self.per_rank[k][:count].sum(axis=1).tolist() for k in self.keys}
        nodes = []
        for row in range(count):
            metrics = dict(self.idents[row] or ())
            for key in self.keys:
                if self.present[key][row]:
                    metrics[key] = sums[key][row]
            node = Node(self.names[row], self.kernels[row], metrics)
            parent = self.parents[row]
            if parent >= 0:
                nodes[parent].adopt(node)
            nodes.append(node)
        return nodes[0], {node: row for row, node in enumerate(nodes)}


def _fold(ranks, keys, files, graph_view=DEFAULT_GRAPH_VIEW):
    merge = RankMerge(ranks, keys, graph_view)
    for path, rank in files:
        merge.add_file(path, rank)
    return merge


def _fold_slice(ranks, keys, files, graph_view=DEFAULT_GRAPH_VIEW):
    """A worker's share: only its ranks' columns travel back."""
    merge = _fold(ranks, keys, files, graph_view)
    count = len(merge.names)
    merge.per_rank = {k: m[:count] for k, m in merge.per_rank.items()}
    merge.present = {k: p[:count] for k, p in merge.present.items()}
    merge.index = None  # rebuilt by the joining side; not worth pickling
    return merge


def _workers(files):
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, len(files) // FILES_PER_WORKER))


def merge_files(files, keys, workers=None, graph_view=DEFAULT_GRAPH_VIEW):
    """Folds (path, rank) pairs into one RankMerge, over `workers` processes (default: the cores,
    at most one per FILES_PER_WORKER files)."""
    ranks = sorted({rank for _, rank in files})
    workers = _workers(files) if workers is None else workers
    if workers <= 1:
        return _fold(ranks, keys, files, graph_view)
    slices = [[] for _ in range(workers)]
    for rank_slice, rank in zip(np.array_split(np.asarray(ranks), workers), range(workers)):
        members = set(rank_slice.tolist())
        slices[rank] = [(p, r) for p, r in files if r in members]
    # A process pool's imports are paid only by merges big enough to use one.
    import multiprocessing  # deferred: a pool only for merges big enough
    from concurrent.futures import ProcessPoolExecutor  # deferred: as above

    with ProcessPoolExecutor(workers - 1, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_fold_slice, _sorted_ranks(s), keys, s, graph_view) for s in slices[1:]]
        merge = _fold(ranks, keys, slices[0], graph_view)  # this process folds the first slice meanwhile
        for future, part_files in zip(futures, slices[1:]):
            part = future.result()
            merge.absorb(part, [merge.column[r] for r in part.ranks])
    return merge


def _sorted_ranks(files):
    return sorted({rank for _, rank in files})
