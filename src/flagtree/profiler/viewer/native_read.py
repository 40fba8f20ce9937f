"""The reader's native fast path: glue between reader.read_tree and ``viewer_read_tree``
(csrc/viewer/tree_reader.cpp), which parses a plain profile's root node from the file's bytes
straight into Nodes, and returns None for anything it leaves to the pure-Python reader."""

import json
import os
import stat

from .nodes import Node


def read_native(native_read, handle, names, size_limit):
    """read_tree's result from the native reader, or None (the native reader is missing,
    the file is not a regular one up to ``size_limit`` bytes, or it has anything the native
    reader leaves to the pure-Python one: then the handle is back at the start)."""
    if native_read is None:
        return None
    try:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > size_limit:
            return None
        data = handle.read(info.st_size + 1)
    except (OSError, ValueError, AttributeError):
        handle.seek(0)
        return None
    seen = set()
    found = native_read(data, Node, seen)
    device_info = None if found is None else _tail(data, found[1])
    if device_info is None:
        if found is not None:
            unlink(found[0])
        handle.seek(0)
        return None
    names.update(seen)
    return found[0], device_info, found[2]  # a node name with reader.METADATA_MARK


def _tail(data, end):
    """device_info from what follows the root (``, {...}]`` or ``]``), or None."""
    try:
        value = json.loads("[0" + data[end:].decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if len(value) == 1:
        return {}
    if len(value) == 2 and type(value[1]) is dict:
        return value[1]
    return None


def unlink(root):
    """Free a tree the native reader built (parent links are cycles) without the GC."""
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children.values())
        node.children = node.parent = None
