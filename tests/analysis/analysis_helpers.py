"""Shared by the analysis tests: fixture paths, the viewer's printed tree read back, profiles
written from node literals."""

import json
from pathlib import Path

from flagtree.profiler.viewer.cli import main
from flagtree.profiler.viewer.render import format_float, format_floats, format_integral

FIXTURES = Path(__file__).resolve().parent.parent / "viewer" / "fixtures"
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.glob("*.hatchet"))
H100 = {"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": 1980000,
                       "memory_clock_rate": 2619000, "bus_width": 6144}}}


def fixture(name):
    return str(FIXTURES / name)


def node(name, metrics=None, *children):
    return {"frame": {"name": name, "type": "function"}, "metrics": dict(metrics or {}),
            "children": list(children)}


def kernel(name, time_ns, count=1, **extra):
    return node(name, {"time (ns)": time_ns, "count": count, "device_id": 0, "device_type": 1,
                       **extra})


def write(path, root, device_info=None):
    Path(path).write_text(json.dumps([root, device_info if device_info is not None else H100]))
    return str(path)


def viewer_tree(capsys, *argv):
    """Run the viewer CLI and read its tree back: {path (tuple of names below ROOT): [cells]}.

    Each line is the value cells (right-aligned, two spaces apart, as wide as the header) and,
    two spaces on, the name behind three characters of guides per level."""
    capsys.readouterr()
    status = main([str(a) for a in argv] + ["--no-color"])
    out, err = capsys.readouterr()
    assert status == 0, err
    header, *lines = out.splitlines()
    rows, stack = {}, []
    for line in lines:
        cells, text = line[:len(header)].split(), line[len(header) + 2:]
        at = 0
        while text[at:at + 3] in ("|  ", "   "):
            at += 3
        if text[at:at + 3] in ("|- ", "`- "):
            at += 3
        depth = at // 3
        del stack[depth:]
        stack.append(text[at:])
        path = tuple(stack[1:])
        assert path not in rows, path
        rows[path] = cells
    return rows


def viewer_sorted(capsys, *argv):
    """The viewer's --print-sorted lines as (cells, path) pairs, in its order."""
    capsys.readouterr()
    status = main([str(a) for a in argv] + ["--print-sorted", "--no-color"])
    out, err = capsys.readouterr()
    assert status == 0, err
    header, *lines = out.splitlines()
    return [(line[:len(header)].split(), tuple(line[len(header) + 2:].split(" -> ")))
            for line in lines]


def cell(value, integral, notation=None):
    """How the viewer prints a value of a column (``notation``: the column's, column_notation)."""
    if integral:
        return format_integral(value)
    return format_floats([value], notation)[0] if notation else format_float(value)


def column_cells(values, integral):
    """A whole column as the viewer prints it: plain decimals, cell by cell (no --sci)."""
    return [cell(v, integral) for v in values]


def profile_cells(profile, columns):
    """{path: [cells]} of a Profile, for the columns the viewer was asked for, as it prints
    them: derived columns by their spec, stored metrics as their inclusive sums."""
    integral = dict(zip(profile.metrics, profile._integral))
    views = list(profile.nodes())
    cells = [column_cells([v.value(c) for v in views], integral.get(c, True)) for c in columns]
    return {view.path: [column[at] for column in cells] for at, view in enumerate(views)}
