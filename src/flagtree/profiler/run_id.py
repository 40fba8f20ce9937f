"""The run id: one random id per session, written into every file the session writes, so that a
reader can tell a profile from the metadata (or the timeline) of another run written under the
same name (a second run, or two processes writing one name at once).

Where it lives (docs/reference/outputs.md): ``<name>.meta.json`` key ``run_id``; ``.hatchet``
the root node's member ``run_id``, written first in the root object, before ``frame`` (hatchet's
and Proton's readers take only ``frame``, ``metrics`` and ``children`` of a node, so they pass
over it); ``.chrome_trace`` in ``otherData`` (the session's metadata: at the head of a trace the
native writer wrote, at the end of one written from Python).

Reading one back costs a few KiB of the file: the head of a tree, the head or tail of a trace.
"""
import os
import re

_ID = r'"run_id"\s*:\s*"([0-9a-f]{32})"'
# The root object opens the file; its run id, when there is one, is its first member.
_TREE_HEAD = re.compile(rb'^\s*\[\s*\{\s*' + _ID.encode())
_ANY = re.compile(_ID.encode())
_HEAD_BYTES = 4096
_TRACE_BYTES = 1 << 20  # otherData is the session's metadata: a few KiB, rarely more


def new_run_id():
    return os.urandom(16).hex()


def _read(path, size, tail):
    try:
        with open(path, "rb") as handle:
            if tail:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - size))
            return handle.read(size)
    except OSError:
        return b""


def run_id_of(path):
    """The run id written in a profile (a .hatchet, part or whole) or a Chrome trace; None for a
    file without one (Proton's, an older version's, a merge) or one that cannot be read."""
    if str(path).endswith(".chrome_trace"):
        # otherData before the events (its first run_id is the session's) or after them (its last)
        head = _ANY.search(_read(path, _TRACE_BYTES, tail=False).split(b'"traceEvents"', 1)[0])
        if head:
            return head.group(1).decode()
        found = _ANY.findall(_read(path, _TRACE_BYTES, tail=True))
        return found[-1].decode() if found else None
    match = _TREE_HEAD.match(_read(path, _HEAD_BYTES, tail=False))
    return match.group(1).decode() if match else None


def mismatch(profile_path, meta, meta_path):
    """None when the metadata `meta` (read from `meta_path`) may describe the profile: same run
    id, or either without one. Otherwise the sentence that says it does not."""
    ours = run_id_of(profile_path)
    theirs = meta.get("run_id") if isinstance(meta, dict) else None
    if ours is None or not isinstance(theirs, str) or ours == theirs:
        return None
    return (f"{meta_path} belongs to another run than {profile_path} (run id {theirs}, the profile's "
            f"{ours}): not used")
