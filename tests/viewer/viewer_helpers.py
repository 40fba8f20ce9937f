"""Plain helpers shared by the viewer tests (fixture paths, tree builders, captured CLI runs)."""

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from flagtree.profiler.viewer import profile_tree, reader, render
from flagtree.profiler.viewer.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.glob("*.hatchet"))


def fixture(name):
    return str(FIXTURES / name)


def node(name, metrics=None, *children, **frame):
    return {"frame": {"name": name, "type": "function", **frame},
            "metrics": dict(metrics or {}), "children": list(children)}


def kernel(name, time_ns, count=1, device=0, device_type=1, **extra):
    metrics = {"time (ns)": time_ns, "count": count, "device_id": device,
               "device_type": device_type, **extra}
    return node(name, metrics)


H100 = {"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": 1980000,
                       "memory_clock_rate": 2619000, "bus_width": 6144}}}


class TtyBuffer(io.StringIO):
    """A stdout stand-in that claims to be a terminal (for colour tests)."""

    def isatty(self):
        return True


def tty_run(monkeypatch, *argv):
    """Run the CLI with a terminal-like stdout; returns (status, text)."""
    buffer = TtyBuffer()
    monkeypatch.setattr(sys, "stdout", buffer)
    status = main([str(a) for a in argv])
    return status, buffer.getvalue()


def captured_run(argv):
    """Run the CLI; returns (status, stdout text, stderr text)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


def both_paths(monkeypatch, argv):
    """(native run, pure-Python run) of the same command line: the slow one with the native
    reader, inclusive sums and row order turned off."""
    fast = captured_run(argv)
    with monkeypatch.context() as patch:
        patch.setattr(reader, "NATIVE_READ", None)
        patch.setattr(profile_tree, "NATIVE_INCLUSIVE", None)
        patch.setattr(render, "NATIVE_ROWS", None)
        slow = captured_run(argv)
    return fast, slow
