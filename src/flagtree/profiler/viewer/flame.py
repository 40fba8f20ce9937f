"""What the picture exports (:mod:`.speedscope`, :mod:`.collapsed`, :mod:`.html_report`)
share: node weights, device labels, frame splitting, interned tables and the atomic write.
Which exports run, and in what order, is :mod:`.exports`'s business.
"""

import contextlib
import re

from ..writers.atomic import atomic_file, write_text
from ..common.devices import DEVICE_KINDS
from .errors import ViewerError
from .metrics import CPU_TIME, TIME, needed_keys
from .pipeline import summed

_PY_FRAME = re.compile(r"^(.*):(\d+)@(.*)$")
HOST = "host"


class Interned:
    """A table of distinct keys, each stored once (as ``entry(key)``) at its first index:
    the string table of the report, the frame table of speedscope."""

    def __init__(self, entry=None):
        self.items = []
        self.index = {}
        self.entry = entry

    def of(self, key):
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.items)
            self.items.append(key if self.entry is None else self.entry(key))
        return found


class Weight:
    """How much one node weighs by itself (exclusive), and the speedscope unit of that."""

    def __init__(self, label, unit, of_node):
        self.label = label
        self.unit = unit
        self.of_node = of_node


def weight_of(profile, spec, selection):
    """The first ``-m`` metric as an exclusive weight. Time metrics weigh in nanoseconds
    whatever unit was asked for (speedscope scales its display itself, folded stacks need
    whole numbers); other metrics are computed on the node's own (exclusive) values."""
    metrics, _ = summed(profile, [spec], selection, keep_own=True)
    family = spec.split("/", 1)[0]
    if family in ("time", "cpu_time") and ("/" in spec or spec == family):  # `time`: the default
        key = TIME if family == "time" else CPU_TIME
        return Weight(key, "nanoseconds", lambda node: node.metrics.get(key))
    keys = needed_keys(metrics)  # the order of root.incl (pipeline.summed sums these keys)
    compute = metrics[0].make({key: at for at, key in enumerate(keys)})
    root_incl = profile.root.incl
    unit = "bytes" if spec == "bytes" else "none"
    return Weight(spec, unit, lambda node: compute([node.metrics.get(k) for k in keys], root_incl))


def own_device_label(node):
    """'CUDA:0' for a node with device identifiers of its own, else None."""
    metrics = node.metrics
    if "device_type" in metrics or "device_id" in metrics:
        kind = DEVICE_KINDS.get(int(metrics.get("device_type", 1)), "device")
        return f"{kind}:{int(metrics.get('device_id', 0))}"
    return None


def device_label(node):
    """'CUDA:0' for a node on a device (its own identifiers or its nearest ancestor's)."""
    while node is not None:
        label = own_device_label(node)
        if label is not None:
            return label
        node = node.parent
    return HOST


def sorted_children(node):
    """The node's children by name: exports come out the same for the same tree."""
    return sorted(node.children.values(), key=_name)


def _name(node):
    return node.name


def split_frame(name):
    """(function, file, line) of a '<file>:<line>@<function>' frame, else (name, None, None)."""
    match = _PY_FRAME.match(name)
    if not match:
        return name, None, None
    return match.group(3), match.group(1), int(match.group(2))


def write_atomic(path, text):
    """The viewer's outputs go through the project's one atomic writer; a failure is one
    ViewerError line."""
    try:
        try:
            write_text(path, text)
        except UnicodeEncodeError:
            # A name may hold a lone surrogate (JSON allows "\ud800"); UTF-8 cannot, so it is
            # written as the text \ud800 rather than failing the export.
            write_text(path, text.encode("utf-8", "backslashreplace").decode("utf-8"))
    except OSError as exc:
        raise ViewerError(f"cannot write '{path}': {exc.strerror or exc}") from None


@contextlib.contextmanager
def open_atomic(path):
    """``with open_atomic(path) as out: out.write(b"...")`` for an export written piece by piece:
    the file appears whole when the block ends, or not at all; a failure is one ViewerError."""
    try:
        with atomic_file(path) as out:
            yield out
    except OSError as exc:
        raise ViewerError(f"cannot write '{path}': {exc.strerror or exc}") from None
