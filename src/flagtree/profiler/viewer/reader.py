"""Streaming reader of one ``.hatchet`` file into a tree of Nodes, without recursion.

Nodes and their ``children`` lists are parsed by a loop with an explicit stack: nesting
depth costs a list entry, never C stack. For speed, each node is first offered whole to the
stdlib's C scanner, whose object hook turns every node object into a Node the moment it is
decoded, so raw JSON objects never pile up: memory follows the tree, not the file. A node
the scanner cannot take (it nests deeper than the scanner's limit, or runs past the text
read so far) is opened by the loop here, which offers its children to the scanner in turn;
after a nesting failure the next SKIP_LEVELS levels are parsed by the loop, so a
100,000-deep chain costs one failed scan per SKIP_LEVELS levels.

Text: a file up to FIRST_READ bytes is decoded in one piece (one string about the file's
size, and no scan is ever cut short); a bigger one is streamed CHUNK bytes at a time, keeping
at least AHEAD characters ahead, so only a subtree bigger than AHEAD is opened by the loop
after a cut scan.
"""

import codecs
import json
import re
from itertools import repeat
from json import scanner as _json_scanner
from operator import attrgetter

from .errors import ViewerError
from .native_read import read_native
from .nodes import Node, attach, make_node, not_profile, plain_metrics

try:  # the optional native fast path (csrc/viewer/tree_reader.cpp); the viewer works without
    from ..native_core import native

    NATIVE_READ = native.viewer.viewer_read_tree
except ImportError:
    NATIVE_READ = None

FIRST_READ = 1 << 30  # bytes read at once at the start: all of any file up to 1 GiB
CHUNK = 1 << 26  # bytes read at a time after that
AHEAD = 1 << 25  # parsing goes on with at least this many characters ahead
SKIP_LEVELS = 256
METADATA_MARK = "launch_metadata"  # in both hooks' scope names (see profile_tree)

_SCAN_VALUE = _json_scanner.make_scanner(json.JSONDecoder())
_SIGNIFICANT = re.compile(r"[ \t\n\r]*([^ \t\n\r])")
_KEY = re.compile(r'[ \t\n\r]*"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*')
_BLANK = re.compile(r"[ \t\n\r]*")
_ONLY_NODES = frozenset((Node,))
_NAME = attrgetter("name")
# JSONDecodeError, and the ValueError of an integer over Python's digit limit.
_SCAN_ERRORS = (StopIteration, ValueError)


class _Text:
    """The file's text, decoded chunk by chunk; parsing goes on at ``text[pos:]``."""

    def __init__(self, handle, path):
        self.handle, self.path = handle, path
        self.decode = codecs.getincrementaldecoder("utf-8-sig")().decode
        self.text = ""
        self.eof = False
        self.base = 0  # file offset, in characters, of text[0]
        self.lines = 0  # newlines before text[0]
        self.line_start = 0  # file offset of the start of the line text[0] is on
        self.metadata_scopes = False  # whether a launch_metadata scope name may be present
        self.bools = False  # whether a JSON true/false may be present

    def fill(self, pos):
        """Drop text[:pos], append the next chunk; returns the new position (0)."""
        if self.eof:
            return pos
        try:
            size = CHUNK if self.base or self.text else FIRST_READ
            data = self.handle.read(size)
            more = self.decode(data, final=len(data) < size)
        except UnicodeDecodeError as exc:
            where = f"byte {self.handle.tell() - len(data) + exc.start}"
            raise ViewerError(f"'{self.path}' is not valid JSON (not UTF-8 text at {where})") from None
        except OSError as exc:
            raise ViewerError(f"cannot read profile '{self.path}': {exc.strerror or exc}") from None
        self.eof = len(data) < size
        text = self.text
        newlines = text.count("\n", 0, pos)
        if newlines:
            self.lines += newlines
            self.line_start = self.base + text.rfind("\n", 0, pos) + 1
        self.base += pos
        self.text = text[pos:] + more
        # Cheap at C speed, and lets the viewer skip a walk over the tree when absent.
        self.metadata_scopes = self.metadata_scopes or METADATA_MARK in self.text
        self.bools = self.bools or "true" in self.text or "false" in self.text
        return 0

    def window(self, pos):
        if len(self.text) - pos < AHEAD and not self.eof:
            return self.fill(pos)
        return pos

    def where(self, pos):
        text = self.text
        line = self.lines + text.count("\n", 0, pos) + 1
        last = text.rfind("\n", 0, pos)
        column = pos - last if last >= 0 else self.base + pos - self.line_start + 1
        return f"line {line} column {column}"


class _Open:
    """A node whose object is being parsed by the loop: members so far, finished children."""

    __slots__ = ("fields", "kids", "scan_from")

    def __init__(self, scan_from):
        self.fields = {}
        self.kids = []
        self.scan_from = scan_from


_NODE, _MEMBER_FIRST, _MEMBER_NEXT, _AFTER_CHILD = range(4)


class _Parser:
    def __init__(self, src, path, names):
        self.src, self.path, self.names = src, path, names
        self.names_update = names.update
        self.scan = _json_scanner.make_scanner(json.JSONDecoder(object_hook=self.node_hook))

    def error(self, pos, what):
        joint = " " if what.endswith(" at") else " at "  # some stdlib messages end in 'at'
        return ViewerError(f"'{self.path}' is not valid JSON ({what}{joint}{self.src.where(pos)})")

    def scan_error(self, pos, exc):
        if isinstance(exc, json.JSONDecodeError):
            return self.error(exc.pos, exc.msg)
        if isinstance(exc, StopIteration):
            return self.error(pos, "Expecting value")
        return self.error(pos, str(exc))

    def significant(self, pos):
        """(next non-blank character, its position); ('', end) at the end of the file."""
        src = self.src
        while True:
            match = _SIGNIFICANT.match(src.text, pos)
            if match:
                return match.group(1), match.start(1)
            if src.eof:
                return "", len(src.text)
            pos = src.fill(pos)

    def value(self, pos):
        """Decode one JSON value (not a node) at pos; returns (value, end)."""
        src = self.src
        while True:
            pos = src.window(pos)  # may replace src.text: read it after
            pos = _BLANK.match(src.text, pos).end()
            try:
                value, end = _SCAN_VALUE(src.text, pos)
            except RecursionError:
                raise self.error(pos, "nested too deeply") from None
            except _SCAN_ERRORS as exc:
                if src.eof:
                    raise self.scan_error(pos, exc) from None
                pos = src.fill(pos)  # the value may go on in the next chunk
                continue
            if end < len(src.text) or src.eof:  # a number may go on in the next chunk
                return value, end
            pos = src.fill(pos)

    def key(self, pos):
        """A member name and the position after its ':'."""
        pos = self.src.window(pos)
        match = _KEY.match(self.src.text, pos)
        if match:
            return match.group(1), match.end()
        char, pos = self.significant(pos)
        if char != '"':
            raise self.error(pos, "Expecting property name enclosed in double quotes")
        name, pos = self.value(pos)
        char, pos = self.significant(pos)
        if char != ":":
            raise self.error(pos, "Expecting ':' delimiter")
        return name, pos + 1

    def scan_node(self, pos):
        """(Node, end, False) when the C scanner decodes the node whole; else (None, pos, deep)."""
        src = self.src
        pos = src.window(pos)
        pos = _BLANK.match(src.text, pos).end()
        try:
            raw, end = self.scan(src.text, pos)
        except RecursionError:
            return None, pos, True
        except _SCAN_ERRORS:
            return None, pos, False  # cut by the end of the text so far, or bad JSON
        if type(raw) is not Node:
            make_node(raw, self.path)  # says what is wrong with it
            raise not_profile(self.path, "a node is not a JSON object")
        return raw, end, False

    def node_hook(self, obj):
        """Object hook of the scanner: a node object becomes a Node, anything else stays.

        Called for every JSON object (~4 per node), so the common case is written out here
        with C-level checks (map/min/max instead of a Python loop over the metrics); anything
        unusual goes through make_node/attach, which check and explain.
        """
        frame = obj.get("frame")
        if type(frame) is not dict:
            return obj  # a frame, metrics or metadata object (or a bad node: the parent says)
        name = frame.get("name")
        metrics = obj.get("metrics")
        if type(name) is str and type(metrics) is dict and plain_metrics(metrics, self.src.bools):
            node = Node(name, "device_id" in metrics or "device_type" in metrics
                        or frame.get("kind") == "kernel" or frame.get("type") == "kernel", metrics)
        else:
            node = make_node(obj, self.path)
        self.names_update(node.metrics)
        kids = obj.get("children")
        if not kids:
            if kids is None or type(kids) is list:
                return node
            raise not_profile(self.path, "a node's children is not a list")
        if type(kids) is not list:
            raise not_profile(self.path, "a node's children is not a list")
        if not _ONLY_NODES.issuperset(map(type, kids)):
            for kid in kids:
                if type(kid) is not Node:
                    self.not_a_node(kid)
        children = node.children = dict(zip(map(_NAME, kids), kids))
        if len(children) == len(kids):
            list(map(setattr, kids, repeat("parent"), repeat(node)))  # a loop at C speed
            return node
        children.clear()  # same-named siblings: the first absorbs the others
        for kid in kids:
            attach(node, kid)
        return node

    def not_a_node(self, raw):
        make_node(raw, self.path)  # raises the precise reason for objects
        raise not_profile(self.path, "a node is not a JSON object")

    def finish(self, open_node):
        fields = open_node.fields
        node = make_node(fields, self.path)
        self.names.update(node.metrics)
        for kid in open_node.kids:
            attach(node, kid)
        return node

    def tree(self, pos):
        """Parse the node value at pos with its whole subtree; returns (Node, end)."""
        stack = []
        state = _NODE
        while True:
            if state == _NODE:
                node, pos, open_node = self.start_node(pos, stack)
                if open_node is not None:
                    stack.append(open_node)
                    state = _MEMBER_FIRST
                    continue
            elif state == _AFTER_CHILD:
                char, pos = self.significant(pos)
                if char == ",":
                    pos, state = pos + 1, _NODE
                elif char == "]":
                    pos, state = pos + 1, _MEMBER_NEXT
                else:
                    raise self.error(pos, "Expecting ',' delimiter")
                continue
            else:
                node, pos, state = self.member(pos, stack, state)
                if node is None:
                    continue
            if not stack:
                return node, pos
            stack[-1].kids.append(node)
            state = _AFTER_CHILD

    def start_node(self, pos, stack):
        """A node value begins: (Node, end, None) if scanned whole, else (None, pos, _Open)."""
        depth = len(stack)
        scan_from = stack[-1].scan_from if stack else 0
        if depth >= scan_from:
            node, pos, deep = self.scan_node(pos)
            if node is not None:
                return node, pos, None
            if deep:
                scan_from = depth + SKIP_LEVELS
        char, pos = self.significant(pos)
        if char != "{":
            raise not_profile(self.path, "a node is not a JSON object")
        return None, pos + 1, _Open(scan_from)

    def member(self, pos, stack, state):
        """One step inside an open node: a member, or its end. Returns (Node|None, pos, state)."""
        char, pos = self.significant(pos)
        if char == "}":
            return self.finish(stack.pop()), pos + 1, None
        if state == _MEMBER_NEXT:
            if char != ",":
                raise self.error(pos, "Expecting ',' delimiter")
            pos += 1
        name, pos = self.key(pos)
        if name != "children":
            stack[-1].fields[name], pos = self.value(pos)
            return None, pos, _MEMBER_NEXT
        char, pos = self.significant(pos)
        if char != "[":
            raise not_profile(self.path, "a node's children is not a list")
        char, after = self.significant(pos + 1)
        if char == "]":
            return None, after + 1, _MEMBER_NEXT
        return None, after, _NODE


def read_tree(handle, path, names):
    """Parse ``[root, device_info]`` from a binary file.

    Returns (root Node, device_info, whether launch_metadata scopes may be present); metric
    names seen are added to ``names``. Raises ViewerError for anything malformed.
    """
    fast = read_native(NATIVE_READ, handle, names, FIRST_READ)
    if fast is not None:
        return fast
    parser = _Parser(_Text(handle, path), path, names)
    try:
        return _read(parser, path)
    finally:
        # The scanner's object hook refers back to the parser: break that cycle now, or the
        # text (as big as the file) would wait for the garbage collector.
        parser.scan = parser.src = None


def _read(parser, path):
    char, pos = parser.significant(0)
    if char != "[":
        _not_a_list(parser, pos)
    char, after = parser.significant(pos + 1)
    if char != "{":
        _not_a_list(parser, pos)
    root, pos = parser.tree(after)
    device_info = {}
    char, pos = parser.significant(pos)
    if char == ",":
        device_info, pos = parser.value(pos + 1)
        char, pos = parser.significant(pos)
    if char == ",":
        raise not_profile(path, _SHAPE)
    if char != "]":
        raise parser.error(pos, "Expecting ',' delimiter")
    char, pos = parser.significant(pos + 1)
    if char:
        raise parser.error(pos, "Extra data")
    if type(device_info) is not dict:
        raise not_profile(path, "device_info (second element) is not an object")
    return root, device_info, parser.src.metadata_scopes


_SHAPE = "expected a JSON list [root, device_info]"


def _not_a_list(parser, pos):
    """Explain a file that does not start with ``[{``: bad JSON, or JSON of the wrong shape."""
    value, _ = parser.value(pos)  # raises for invalid JSON
    if type(value) is list and 1 <= len(value) <= 2:
        raise not_profile(parser.path, "a node is not a JSON object")
    raise not_profile(parser.path, _SHAPE)
