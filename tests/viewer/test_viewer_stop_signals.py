"""Ctrl-C or SIGTERM while the viewer writes an export or --merge-traces writes its merge: one
line, exit 130 / 143, no traceback, no hidden temporary file, the target not written (an earlier
file stays). Real signals, sent by the subprocess to itself while the output's temporary file is
open and holds its text (just before its rename)."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from viewer_helpers import fixture

DRIVER = textwrap.dedent('''
    import os, signal, sys
    signum = getattr(signal, sys.argv[1])
    real_replace = os.replace
    def replace(src, dst):
        os.kill(os.getpid(), signum)
        return real_replace(src, dst)
    os.replace = replace
    if sys.argv[2] == "merge":
        from flagtree.profiler.distributed.merge_traces import main
    else:
        from flagtree.profiler.viewer.cli import main
    sys.exit(main(sys.argv[3:]))
''')

TRACE = '{"traceEvents": [{"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}'


def run(tmp_path, signame, *argv):
    (tmp_path / "driver.py").write_text(DRIVER)
    return subprocess.run([sys.executable, "driver.py", signame, *argv], cwd=tmp_path, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)


def leftovers(tmp_path):
    return sorted(n for n in os.listdir(tmp_path) if n.endswith(".tmp"))


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("option", ["--html", "--speedscope", "--collapsed"])
def test_a_signal_during_an_export_ends_it_in_one_line(tmp_path, signame, option):
    (tmp_path / "out").write_text("earlier")
    result = run(tmp_path, signame, "view", option, "out", fixture("nested_scopes.hatchet"))
    what = "Ctrl-C" if signame == "SIGINT" else "SIGTERM"
    assert result.returncode == 128 + getattr(signal, signame), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"flagtree-profiler-viewer: error: stopped by {what}: a file being written was not written "
        "(an earlier one stays as it was)"]
    assert leftovers(tmp_path) == [] and (tmp_path / "out").read_text() == "earlier"


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_during_merge_traces_ends_it_in_one_line(tmp_path, signame):
    (tmp_path / "run.rank0.chrome_trace").write_text(TRACE)
    result = run(tmp_path, signame, "merge", "-o", "m.json", "run.rank0.chrome_trace")
    what = "Ctrl-C" if signame == "SIGINT" else "SIGTERM"
    assert result.returncode == 128 + getattr(signal, signame), result.stderr
    assert result.stderr.splitlines() == [f"merge_traces: stopped by {what}: m.json was not written"]
    assert leftovers(tmp_path) == [] and not (tmp_path / "m.json").exists()
