"""Fixtures of the rank tests: a clean launcher environment (no RANK & co. leaking in)."""
import pytest

from flagtree.profiler.distributed import ranks

LAUNCHER_NAMES = [name for group in ranks.LAUNCHER_VARIABLES for name in group[:3]]


@pytest.fixture
def launcher(monkeypatch):
    """Clears every launcher variable; call it with name=value pairs to set some."""
    for name in LAUNCHER_NAMES + ["FLAGTREE_PROFILER_RANKS", "FLAGTREE_PROFILER_GATHER"]:
        monkeypatch.delenv(name, raising=False)

    def set_vars(**values):
        for name, value in values.items():
            monkeypatch.setenv(name, str(value))

    return set_vars
