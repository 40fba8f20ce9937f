"""What inductor's kernels fuse, as a profile carries it: the root node's member
``inductor_kernels`` ({kernel name: {"fused_aten", "fused_nodes", "source_lines"?,
"fused_variants"?}}, written once per name before the root's ``frame``), and how the terminal
shows it on the kernel nodes of those names (``--fused``).

Reading it costs the file's head: the root's members are parsed one by one up to ``frame``, so
a file without the member pays a few bytes, and the tree below is never scanned here.
"""
import json
import os
import stat

from ..common.safe_text import safe

MEMBER = "inductor_kernels"
FIELDS = ("fused_aten", "fused_nodes", "source_lines")
_HEAD = 1 << 16  # first read; doubled while the root's members run past it
_STOP = ("frame", "metrics", "children")
_DECODER = json.JSONDecoder()
_BLANK = " \t\n\r"


def _skip(text, pos):
    while pos < len(text) and text[pos] in _BLANK:
        pos += 1
    return pos


def _root_members(text):
    """The root's members before its frame; None when `text` ends inside them."""
    pos = _skip(text, 0)
    if text[pos:pos + 1] != "[":
        return {}
    pos = _skip(text, pos + 1)
    if text[pos:pos + 1] != "{":
        return {}
    members, pos = {}, pos + 1
    while True:
        pos = _skip(text, pos)
        try:
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, pos)
            if not isinstance(key, str) or text[pos:pos + 1] != ":" or key in _STOP:
                return members
            value, pos = _DECODER.raw_decode(text, _skip(text, pos + 1))
        except (ValueError, RecursionError):
            return None
        members[key] = value
        pos = _skip(text, pos)
        if text[pos:pos + 1] != ",":
            return members
        pos += 1


def _valid(table):
    """The entries of a read table that have the documented shape (lists of strings)."""
    if not isinstance(table, dict):
        return {}
    kept = {}
    for name, facts in table.items():
        if isinstance(facts, dict) and all(isinstance(facts.get(f, []), list)
                                           and all(isinstance(i, str) for i in facts.get(f, []))
                                           for f in FIELDS):
            kept[name] = facts
    return kept


def read_fused(path):
    """{kernel name: facts} from a ``.hatchet`` file's root; {} when it has none or is unreadable."""
    size = _HEAD
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return {}  # a FIFO or pipe was read once already, by the tree's reader
        with open(path, "rb") as handle:
            data = handle.read(size)
            while True:
                members = _root_members(data.decode("utf-8", errors="replace"))
                more = handle.read(size) if members is None else b""
                if not more:
                    return _valid((members or {}).get(MEMBER))
                data += more
                size *= 2
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return {}


def merge_fused(into, other):
    """Adds another profile's table: a name both have keeps the first's facts."""
    for name, facts in other.items():
        into.setdefault(name, facts)


def describe(facts):
    """One terminal-safe line of a kernel's facts."""
    parts = [f"fuses {', '.join(facts.get('fused_aten', []))}"]
    if facts.get("fused_nodes"):
        parts.append(f"nodes {', '.join(facts['fused_nodes'])}")
    if facts.get("source_lines"):
        parts.append(f"from {', '.join(facts['source_lines'])}")
    if facts.get("fused_variants"):
        parts.append(f"{facts['fused_variants']} fusions share this name")
    return safe("; ".join(parts))


def annotated(nodes, texts, table):
    """Each row's text, a kernel's with ``  [fuses ...]`` after it when the table knows its name."""
    for node, text in zip(nodes, texts):
        facts = table.get(node.name) if node.kernel else None
        yield f"{text}  [{describe(facts)}]" if facts else text
