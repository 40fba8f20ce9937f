"""``--collapsed``: folded stacks (``a;b;kernel 123``), the input of flamegraph.pl.

One line per node that weighs something by itself, weights rounded to whole numbers. Names are
percent-escaped (their UTF-8 bytes, ``%XX``) where they hold ``%``, ``;`` or a character that
steers a terminal (:data:`safe_text.CONTROLS`: a newline would end the line, a ``;`` split the
frame, U+009B or U+202E reach whoever ``cat``s the file), so every line unquotes back to the
original path.

Every line repeats its whole path, so a deep tree's file grows with depth squared (a 10,000-deep
chain of weighing nodes is ~300 MB, 100,000 deep ~35 GB). The file is streamed (memory stays
linear in the tree), and its exact size is counted first: above ``--collapsed-limit`` (default
1G, i.e. 1 GiB) the export is refused with that size, before anything is written.
"""

import math
import re

from .errors import ViewerError
from .flame import open_atomic, sorted_children
from ..common.safe_text import CONTROLS

DEFAULT_LIMIT = 1 << 30
_UNSAFE = re.compile(f"[%;{CONTROLS}]")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def _percent(match):
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8"))


def escape_frame(name):
    return _UNSAFE.sub(_percent, name)


def parse_limit(text):
    """'1G', '500M', '123456' (bytes) -> bytes."""
    if text is None:
        return DEFAULT_LIMIT
    match = _SIZE.match(text)
    if not match:
        raise ViewerError(f"invalid --collapsed-limit '{text}': expected a size such as 2G, 500M or 1000000")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def _encoded(name):
    # A lone surrogate (JSON allows "\ud800") is written as the text \ud800: UTF-8 has no form.
    return escape_frame(name).encode("utf-8", "backslashreplace")


def _frames(label, profile, weight):
    """(depth, escaped name, whole-number weight) per node, depth first with children by name;
    the root comes first as 'ROOT' at depth 0 (its lines alone carry it), its children at 1."""
    base = [_encoded(label)] if label else []
    for frame in base:
        yield 0, frame, 0
    first = len(base)
    stack = [(profile.root, first)]
    while stack:
        node, depth = stack.pop()
        value = weight.of_node(node)
        count = int(round(value)) if value is not None and value > 0 and math.isfinite(value) else 0
        if node is profile.root:
            yield depth, b"ROOT", count
            depth -= 1  # the root's children sit where the root was: 'a;b', not 'ROOT;a;b'
        else:
            yield depth, _encoded(node.name), count
        stack.extend((kid, depth + 1) for kid in reversed(sorted_children(node)))


def _lines(weights, emit):
    """Calls emit(prefix bytearray, count suffix) for every line; the prefix is one buffer cut
    back and extended as the walk moves, so memory is the deepest path, not every path."""
    for label, profile, weight in weights:
        path = bytearray()
        ends = []  # ends[d]: the length of path through depth d
        for depth, frame, count in _frames(label, profile, weight):
            del ends[depth:]
            del path[ends[-1] if ends else 0:]
            if ends:
                path += b";"
            path += frame
            ends.append(len(path))
            if count:
                emit(path, b" %d\n" % count)


def folded_size(weights):
    """(bytes, lines) the folded file of these weights takes."""
    total = [0, 0]

    def count(path, suffix):
        total[0] += len(path) + len(suffix)
        total[1] += 1

    _lines(weights, count)
    return total[0], total[1]


def _human(size):
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def export(source, options, out_path):
    """The exporter (see :mod:`.exports`): the first -m metric of every rank group."""
    limit = parse_limit(getattr(options, "collapsed_limit", None))
    weights = source.weighted_groups()
    size, lines = folded_size(weights)
    if size > limit:
        raise ViewerError(
            f"--collapsed '{out_path}' would be {size:,} bytes ({_human(size)}, {lines:,} lines; every line repeats its "
            f"whole path, so deep trees grow with depth squared), over --collapsed-limit {_human(limit)}: "
            f"raise the limit, pick a part with -i/-e, or use --speedscope (linear in depth)")
    with open_atomic(out_path) as out:
        _lines(weights, lambda path, suffix: (out.write(path), out.write(suffix)))
