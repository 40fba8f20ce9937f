"""Timelines given to the viewer: a Chrome-trace JSON (``.chrome_trace``) or a Perfetto protobuf
(``.pftrace``) is not a tree; the viewer says what it is and what opens it.

Only looked at after a file failed to read as a tree, so tree profiles pay nothing for it.
"""

import os
import re

_CHROME_EXTENSIONS = (".chrome_trace", ".trace.json")
_PERFETTO_EXTENSIONS = (".pftrace", ".perfetto-trace", ".perfetto")
_SNIFF_BYTES = 1 << 16
# {"traceEvents": ...} or {"displayTimeUnit": ...} objects; [{"name": ..., "ph": "X"...}] arrays.
_CHROME_OBJECT = re.compile(rb'^\s*\{.*"(traceEvents|displayTimeUnit|systemTraceEvents)"\s*:', re.S)
_CHROME_ARRAY = re.compile(rb'^\s*\[\s*\{[^\[\]{}]*"ph"\s*:\s*"', re.S)


def _head(path):
    try:
        with open(path, "rb") as handle:
            return handle.read(_SNIFF_BYTES)
    except OSError:
        return b""


def _looks_like_perfetto(head):
    """A Perfetto trace is a sequence of TracePacket fields: tag 0x0a (field 1, bytes), a
    varint length, then the packet, whose own first byte is again a field tag."""
    if len(head) < 3 or head[0] != 0x0A:
        return False
    at, length, shift = 1, 0, 0
    while at < len(head) and at < 6:
        byte = head[at]
        length |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            break
        shift += 7
    return 0 < length and at < len(head) and (head[at] & 0x07) in (0, 1, 2, 5)


def timeline_kind(path):
    """'a Chrome-trace JSON timeline', 'a Perfetto trace' or None."""
    name = os.path.basename(path).lower()
    head = _head(path)
    if name.endswith(_PERFETTO_EXTENSIONS) or _looks_like_perfetto(head):
        return "a Perfetto trace"
    if name.endswith(_CHROME_EXTENSIONS) or _CHROME_OBJECT.match(head) or _CHROME_ARRAY.match(head):
        return "a Chrome-trace JSON timeline"
    return None


def timeline_message(path, kind):
    where = "the Perfetto UI (https://ui.perfetto.dev: 'Open trace file', or drop the file on the page)"
    if "Chrome" in kind:
        where += " or chrome://tracing ('Load')"
    return (f"'{path}' is {kind}, not a tree profile: open it in {where}; this viewer reads tree "
            f"profiles (.hatchet), and merges Chrome traces with --merge-traces OUT")
