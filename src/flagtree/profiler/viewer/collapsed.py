"""``--collapsed``: folded stacks (``a;b;kernel 123``), the input of flamegraph.pl.

One line per node that weighs something by itself, weights rounded to whole numbers. Names are
percent-escaped where they hold ``%``, ``;`` or control characters (a newline would end the line,
a ``;`` would split the frame), so every line parses back to the original path.
"""

import re

from .flame import weighted_paths, write_atomic

_UNSAFE = re.compile(r"[%;\x00-\x1f\x7f]")


def escape_frame(name):
    return _UNSAFE.sub(lambda m: f"%{ord(m.group()):02X}", name)


def collapsed_lines(weights):
    """weights: [(rank label or None, Profile, Weight)] -> folded lines. Ranks get their own
    outermost frame ('rank 0;...') so several ranks share one flame graph side by side."""
    lines = []
    for label, profile, weight in weights:
        prefix = [escape_frame(label)] if label else []
        for _, path, value in weighted_paths(profile.root, weight):
            count = int(round(value))
            if count <= 0:
                continue
            frames = prefix + [escape_frame(n) for n in path] if path else prefix + ["ROOT"]
            lines.append(f"{';'.join(frames)} {count}")
    return lines


def export(source, options, out_path):
    """The exporter (see :mod:`.exports`): the first -m metric of every rank group."""
    lines = collapsed_lines(source.weighted_groups())
    write_atomic(out_path, "".join(line + "\n" for line in lines))
