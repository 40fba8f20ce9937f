"""``--speedscope``: the tree as speedscope evented profiles (one per device, or per rank).

A calling-context tree maps to an evented profile (https://www.speedscope.app/file-format-schema.json):
each node opens its frame, spends its exclusive value, runs its children one after another, and
closes. Every node is two events, so the file and the memory are linear in the tree, however
deep (a sampled profile would repeat every root-to-node path: quadratic in depth). The file is
streamed: the profiles first, the frame table they index last.
"""

import json

from .flame import HOST, Interned, open_atomic, own_device_label, sorted_children, split_frame

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"
_EVENTS_PER_WRITE = 4096


def _frame_entry(name):
    """A speedscope frame: python frames '<file>:<line>@<function>' get file and line."""
    function, file, line = split_frame(name)
    frame = {"name": function}
    if file is not None:
        frame["file"] = file
        frame["line"] = line
    return frame


class _Walk:
    """One tree in depth-first order (children by name) with, per node, its depth, its own
    weight, its group (device label, or the rank's label) and the groups weighing below it."""

    def __init__(self, root, weight, rank_label):
        self.nodes, self.depth, self.value, self.group = [], [], [], []
        parents, groups = [], {}
        stack = [(root, 0, -1, rank_label or HOST)]
        while stack:
            node, depth, parent, inherited = stack.pop()
            group = inherited if rank_label else (own_device_label(node) or inherited)
            value = weight.of_node(node)
            value = value if value is not None and value > 0 else 0
            index = len(self.nodes)
            self.nodes.append(node)
            self.depth.append(depth)
            self.value.append(value)
            self.group.append(groups.setdefault(group, len(groups)) if value else -1)
            parents.append(parent)
            stack.extend((kid, depth + 1, index, group) for kid in reversed(sorted_children(node)))
        self.labels = sorted(groups, key=groups.get)
        self.below = [1 << g if g >= 0 else 0 for g in self.group]
        for index in range(len(self.nodes) - 1, 0, -1):  # children come after their parent
            self.below[parents[index]] |= self.below[index]

    def events(self, group, frames):
        """(type, frame index, at) of the group's evented profile, and its end value."""
        bit, at, open_ = 1 << group, 0, []
        if self.group[0] == group:  # the root's own weight, as a frame of its own: the
            frame = frames.of("ROOT")  # other frames are not drawn on top of it
            yield "O", frame, at
            at += self.value[0]
            yield "C", frame, at
        for index in range(1, len(self.nodes)):
            if not self.below[index] & bit:
                continue
            depth = self.depth[index]
            while open_ and open_[-1][0] >= depth:
                yield "C", open_.pop()[1], at
            frame = frames.of(self.nodes[index].name)
            yield "O", frame, at
            open_.append((depth, frame))
            if self.group[index] == group:
                at += self.value[index]
        while open_:
            yield "C", open_.pop()[1], at
        self.end = at


def _write_profile(out, name, unit, walk, group, frames):
    head = {"type": "evented", "name": name, "unit": unit, "startValue": 0}
    out.write(json.dumps(head)[:-1].encode() + b', "events": [')
    parts, first = [], True
    for kind, frame, at in walk.events(group, frames):
        parts.append('{"type":"%s","frame":%d,"at":%s}' % (kind, frame, _number(at)))
        if len(parts) >= _EVENTS_PER_WRITE:
            out.write(((", " if not first else "") + ",".join(parts)).encode())
            parts, first = [], False
    if parts:
        out.write(((", " if not first else "") + ",".join(parts)).encode())
    out.write(b'], "endValue": ' + _number(walk.end).encode() + b"}")


def _number(value):
    """JSON for a weight: whole numbers as integers, non-finite sums (strict JSON) as 0."""
    if type(value) is int:
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return "0"
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))


def write_document(out, weights):
    """weights: [(rank label or None, Profile, Weight)] -> the speedscope JSON, streamed."""
    frames = Interned(_frame_entry)
    out.write(b'{"$schema": "' + SCHEMA_URL.encode() + b'", "exporter": "flagtree-profiler-viewer", '
              b'"activeProfileIndex": 0, "profiles": [')
    first = True
    for label, profile, weight in weights:
        walk = _Walk(profile.root, weight, label)
        for group in sorted(range(len(walk.labels)), key=walk.labels.__getitem__):
            name = f"{walk.labels[group]} - {weight.label}" + ("" if label else f" ({profile.label})")
            out.write(b"" if first else b", ")
            _write_profile(out, name, weight.unit, walk, group, frames)
            first = False
    name = ", ".join(p.label for _, p, _ in weights)
    tail = {"shared": {"frames": frames.items}, "name": name}
    out.write(b"], " + _json(tail)[1:])


def _json(value):
    # A lone surrogate (JSON allows "\ud800") stays the escape \ud800: ensure_ascii writes it so.
    return json.dumps(value, separators=(",", ":")).encode("ascii")


def export(source, options, out_path):
    """The exporter (see :mod:`.exports`): the first -m metric of every rank group."""
    with open_atomic(out_path) as out:
        write_document(out, source.weighted_groups())
