"""The viewer's command, run in-process for the fused-op tests."""
from flagtree.profiler.viewer.cli import main


def run_viewer(capsys, *argv):
    capsys.readouterr()
    status = main([str(a) for a in argv] + ["--no-color"])
    out, err = capsys.readouterr()
    assert status == 0, err
    return out
