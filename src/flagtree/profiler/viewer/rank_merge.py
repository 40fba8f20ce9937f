"""The streaming fold behind the cross-rank tree (viewer/ranks.py).

Files are read one at a time; each node is found (or added) in a merged tree by its path, and
the values of the metrics the columns read go into one float64 matrix per metric: rows =
merged nodes, columns = ranks. Sums over ranks are row sums of those matrices, so no per-node
dictionaries are added up. With many files the fold is split over the cores (forked workers,
each folding a contiguous slice of the ranks) and the partial trees are joined by path.
"""
import json
import os
import re

from .errors import ViewerError
from .profile_tree import IDENTIFIERS, Node, parse_json, read_file

class _LazyNumpy:
    """numpy, imported on first use: the viewer itself needs no third-party package, and only
    a rank merge pays for (and needs) numpy."""

    def __getattr__(self, name):
        try:
            import numpy
        except ImportError:
            raise ViewerError("merging ranks needs numpy, which is not installed (pip install numpy)") from None
        return getattr(numpy, name)


np = _LazyNumpy()
_RANK_FILE = re.compile(r"\.rank(\d+)(?:\.part\d+)?\.hatchet$")
_PART = re.compile(r"(?:\.part\d+)?\.hatchet$")
_DEVICE_TYPES = {"HIP": 0, "CUDA": 1, "CPU": 2}  # Proton writes device identifiers as strings
FILES_PER_WORKER = 32  # below this a worker's start-up costs more than it saves


def is_rank_file(path):
    return bool(_RANK_FILE.search(path))


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
    """The .meta.json written beside a profile (parts share their session's), or {}."""
    try:
        with open(_PART.sub("", path) + ".meta.json") as handle:
            meta = json.load(handle)
        return meta if isinstance(meta, dict) else {}
    except (OSError, ValueError):
        return {}


def meta_key(path):
    return _PART.sub("", path)


def rank_of(path, meta):
    named = _RANK_FILE.search(path)
    if named:
        return int(named.group(1))
    return meta["rank"] if type(meta.get("rank")) is int else 0


def _not_profile(path, why):
    return ViewerError(f"'{path}' is not a tree profile: {why}")


class RankMerge:
    """Merged nodes as flat lists (a parent's row precedes its children's) and, per metric key,
    a (rows x ranks) matrix of exclusive values with a per-row presence flag."""

    def __init__(self, ranks, keys):
        self.ranks = list(ranks)
        self.column = {rank: c for c, rank in enumerate(self.ranks)}
        self.keys = list(dict.fromkeys(keys))
        self.index = {(-1, None): 0}  # (parent row, name) -> row; every file's root is row 0
        self.names, self.frames, self.parents, self.idents = ["ROOT"], [{"name": "ROOT"}], [-1], [None]
        self.per_rank = {k: np.zeros((1024, len(self.ranks))) for k in self.keys}
        self.present = {k: np.zeros(1024, dtype=bool) for k in self.keys}
        self.device_info, self.metric_names = {}, set()

    def _new_row(self, key, name, frame, parent):
        row = self.index[key] = len(self.names)
        self.names.append(name)
        self.frames.append(frame)
        self.parents.append(parent)
        self.idents.append(None)
        return row

    def add_file(self, path, rank):
        data = parse_json(read_file(path), path)
        if type(data) is not list or not data or len(data) > 2 or type(data[0]) is not dict:
            raise _not_profile(path, "expected a JSON list [root, device_info]")
        self._add_devices(data[1] if len(data) == 2 else {}, path)
        found = {k: ([], []) for k in self.keys}
        readers = [(k, found[k][0].append, found[k][1].append) for k in self.keys]
        index, idents, names_seen = self.index, self.idents, self.metric_names
        stack = [(data[0], -1)]
        while stack:  # the hot loop: kept flat, no calls per node beyond dict lookups
            raw, parent = stack.pop()
            if type(raw) is not dict:
                raise _not_profile(path, "a node is not a JSON object")
            frame = raw.get("frame")
            name = frame.get("name") if type(frame) is dict else None
            if type(name) is not str:
                raise _not_profile(path, "a node has no frame name")
            key = (parent, name) if parent >= 0 else (-1, None)
            row = index.get(key)
            if row is None:
                row = self._new_row(key, name, frame, parent)
                if parent < 0:
                    self.frames[0] = frame
            metrics = raw.get("metrics")
            if metrics:
                if type(metrics) is not dict:
                    raise _not_profile(path, f"node '{name}' has non-object metrics")
                names_seen.update(metrics)
                for metric, add_row, add_value in readers:
                    value = metrics.get(metric)
                    if value is not None:
                        add_row(row)
                        add_value(value)
                if idents[row] is None and ("device_id" in metrics or "device_type" in metrics):
                    idents[row] = {k: _identifier(k, metrics[k], path) for k in IDENTIFIERS if k in metrics}
            children = raw.get("children")
            if children:
                if type(children) is not list:
                    raise _not_profile(path, "a node's children is not a list")
                stack.extend([(child, row) for child in children])
        self._store(found, self.column[rank], path)

    def _store(self, found, column, path):
        self._grow(len(self.names))
        for key, (rows, values) in found.items():
            if not rows:
                continue
            try:
                numbers = np.asarray(values, dtype=np.float64)
            except (TypeError, ValueError):
                raise _not_profile(path, f"metric '{key}' is not a number") from None
            np.add.at(self.per_rank[key][:, column], rows, numbers)
            self.present[key][rows] = True

    def _add_devices(self, device_info, path):
        if type(device_info) is not dict:
            raise _not_profile(path, "device_info is not an object")
        for kind, devices in device_info.items():
            if isinstance(devices, dict) and isinstance(self.device_info.get(kind), dict):
                self.device_info[kind] = {**devices, **self.device_info[kind]}
            else:
                self.device_info.setdefault(kind, devices)

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
                mine = self._new_row(key, part.names[row], part.frames[row], parent)
            if self.idents[mine] is None:
                self.idents[mine] = part.idents[row]
            remap[row] = mine
        self._grow(len(self.names))
        rows = np.asarray(remap)
        for key in self.keys:
            self.per_rank[key][np.ix_(rows, columns)] += part.per_rank[key][: len(remap)]
            self.present[key][rows] |= part.present[key][: len(remap)]
        self.metric_names |= part.metric_names
        for kind, devices in part.device_info.items():
            self._add_devices({kind: devices}, "a partial merge")

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
            parent = self.parents[row]
            node = Node(self.names[row], self.frames[row], metrics, nodes[parent] if parent >= 0 else None)
            if parent >= 0:
                nodes[parent].children[node.name] = node
            nodes.append(node)
        return nodes[0], {node: row for row, node in enumerate(nodes)}


def _identifier(key, value, path):
    if type(value) is str:
        if key == "device_type" and value.upper() in _DEVICE_TYPES:
            return _DEVICE_TYPES[value.upper()]
        if key == "device_id" and value.isdigit():
            return int(value)
        raise _not_profile(path, f"metric '{key}' is not a device identifier: {value!r}")
    return value


def _fold(ranks, keys, files):
    merge = RankMerge(ranks, keys)
    for path, rank in files:
        merge.add_file(path, rank)
    return merge


def _fold_slice(ranks, keys, files):
    """A worker's share: only its ranks' columns travel back."""
    merge = _fold(ranks, keys, files)
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


def merge_files(files, keys, workers=None):
    """Folds (path, rank) pairs into one RankMerge, over `workers` processes (default: the cores,
    at most one per FILES_PER_WORKER files)."""
    ranks = sorted({rank for _, rank in files})
    workers = _workers(files) if workers is None else workers
    if workers <= 1:
        return _fold(ranks, keys, files)
    slices = [[] for _ in range(workers)]
    for rank_slice, rank in zip(np.array_split(np.asarray(ranks), workers), range(workers)):
        members = set(rank_slice.tolist())
        slices[rank] = [(p, r) for p, r in files if r in members]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers - 1, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_fold_slice, _sorted_ranks(s), keys, s) for s in slices[1:]]
        merge = _fold(ranks, keys, slices[0])  # this process folds the first slice meanwhile
        for future, part_files in zip(futures, slices[1:]):
            part = future.result()
            merge.absorb(part, [merge.column[r] for r in part.ranks])
    return merge


def _sorted_ranks(files):
    return sorted({rank for _, rank in files})
