"""pytest fixtures for the viewer tests: an in-process CLI runner, a profile writer."""

import json

import pytest

from flagtree.profiler.viewer.cli import main


@pytest.fixture
def viewer(capsys, monkeypatch):
    """Run the CLI in-process; returns (exit status, stdout, stderr)."""
    monkeypatch.delenv("NO_COLOR", raising=False)

    def run(*argv):
        status = main([str(a) for a in argv])
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


@pytest.fixture
def write_profile(tmp_path):
    """Write a profile object (or raw text) to a file and return its path."""

    def write(content, name="p.hatchet"):
        path = tmp_path / name
        text = content if isinstance(content, str) else json.dumps(content)
        path.write_text(text)
        return str(path)

    return write
