"""docs/reference/analysis.md stays true: its notebook example runs, its tables name what exists."""

import inspect
import os
import re
import shutil

import pytest

from analysis_helpers import fixture
from flagtree.profiler.analysis import Profile, parse, read

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "reference", "analysis.md")


def _doc():
    with open(DOC) as handle:
        return handle.read()


def test_the_notebook_example_runs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pandas")
    pytest.importorskip("hatchet")
    shutil.copy(fixture("nested_scopes.hatchet"), tmp_path / "run.hatchet")
    shutil.copy(fixture("other_run.hatchet"), tmp_path / "before.hatchet")
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", _doc(), re.S)
    assert len(blocks) >= 6
    namespace = {}
    for block in blocks:
        exec(compile(block, DOC, "exec"), namespace)  # noqa: S102 - the doc's own example
    printed = capsys.readouterr().out
    assert "attn_bwd" in printed and "layernorm_kernel" in printed
    assert isinstance(namespace["prof"], Profile) and namespace["change"].is_diff
    assert namespace["fwd"].metrics == ["time/us", "count"]


def test_the_tables_name_members_that_exist():
    doc = _doc()
    table = doc.split("## `Profile`")[1].split("### DataFrame")[0]
    first_cells = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    members = {m for cell in first_cells for m in re.findall(r"`(\w+)", cell)}
    assert {"root", "nodes", "to_dataframe", "top", "diff", "close", "metrics"} <= members
    profile = read(fixture("nested_scopes.hatchet"))
    for name in members - {"iter", "len"}:
        assert hasattr(profile, name), name
    view = profile.root
    nodeview = table.split("`NodeView`:")[1]
    for name in re.findall(r"`(\w+)`", nodeview) + re.findall(r"`(\w+)\(", nodeview):
        assert name == "None" or hasattr(view, name), name
    signature = inspect.signature(read)
    documented = re.search(r"read\(\*paths, (.*?)\) -> Profile", doc).group(1)
    assert [p.split("=")[0] for p in documented.split(", ")] == list(signature.parameters)[1:]
    assert list(inspect.signature(parse).parameters) == ["metrics", "filename", "include", "exclude"]
