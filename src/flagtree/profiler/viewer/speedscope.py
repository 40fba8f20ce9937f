"""``--speedscope``: the tree as speedscope sampled profiles (one per device, or per rank).

A calling-context tree maps to a sampled profile whose samples are root-to-node paths and whose
weights are the nodes' exclusive values (https://www.speedscope.app/file-format-schema.json).
"""

from ..writers.atomic import strict_json
from .flame import Interned, device_label, split_frame, weighted_paths, write_atomic

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"


def _frame_entry(name):
    """A speedscope frame: python frames '<file>:<line>@<function>' get file and line."""
    function, file, line = split_frame(name)
    frame = {"name": function}
    if file is not None:
        frame["file"] = file
        frame["line"] = line
    return frame


def _profile(name, unit, samples, frames):
    stacks, weights = [], []
    for path, value in samples:
        stacks.append([frames.of(n) for n in path] if path else [frames.of("ROOT")])
        weights.append(value)
    return {"type": "sampled", "name": name, "unit": unit, "startValue": 0,
            "endValue": sum(weights), "samples": stacks, "weights": weights}


def _split_by_device(paths):
    groups = {}
    for node, path, value in paths:
        groups.setdefault(device_label(node), []).append((path, value))
    return groups


def speedscope_document(weights):
    """weights: [(rank label or None, Profile, Weight)] -> the speedscope JSON object."""
    frames = Interned(_frame_entry)
    profiles = []
    for label, profile, weight in weights:
        paths = weighted_paths(profile.root, weight)
        if label is not None:
            groups = {label: [(path, value) for _, path, value in paths]}
        else:
            groups = _split_by_device(paths)
        for group in sorted(groups):
            name = f"{group} - {weight.label}" + ("" if label else f" ({profile.label})")
            profiles.append(_profile(name, weight.unit, groups[group], frames))
    return {"$schema": SCHEMA_URL, "shared": {"frames": frames.items}, "profiles": profiles,
            "name": ", ".join(p.label for _, p, _ in weights), "activeProfileIndex": 0,
            "exporter": "flagtree-profiler-viewer"}


def export(source, options, out_path):
    """The exporter (see :mod:`.exports`): the first -m metric of every rank group."""
    document = speedscope_document(source.weighted_groups())
    write_atomic(out_path, strict_json(document, separators=(",", ":")))
