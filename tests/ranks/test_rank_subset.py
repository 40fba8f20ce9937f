"""FLAGTREE_PROFILER_RANKS with real processes: three ranks, only 1-2 profile. Rank 0 pays
nothing (start returns -1, writes nothing, takes no part in the gather), and the gather goes to
the lowest profiled rank, 1."""
import json
import os

import pytest

from test_four_ranks import launch


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return launch(tmp_path_factory.mktemp("subset"), 3, "", {"FLAGTREE_PROFILER_RANKS": "1-2"})


def test_a_rank_left_out_writes_nothing(run):
    reports, folders = run
    assert reports[0]["session_ids"] == [-1, -1]
    assert os.listdir(folders[0]) == [] and reports[0]["warnings"] == []


def test_the_lowest_profiled_rank_collects(run):
    reports, folders = run
    assert -1 not in reports[1]["session_ids"] + reports[2]["session_ids"]
    # the trace session shares the tree's name, so its metadata takes its extension (paths.py)
    kinds = ("chrome_trace", "hatchet", "meta.json", "chrome_trace.meta.json")
    assert sorted(os.listdir(folders[2])) == sorted(f"run.rank2.{ext}" for ext in kinds)
    gathered = sorted(os.listdir(folders[1]))
    assert gathered == sorted([f"run.rank{r}.{ext}" for r in (1, 2) for ext in kinds] + ["run.merged.chrome_trace"])
    with open(folders[1] / "run.rank1.meta.json") as handle:
        summary = json.load(handle)["gather"]
    assert summary["root"] == 1 and summary["ranks"] == [1, 2] and summary["missing"] == []
    with open(folders[1] / "run.merged.chrome_trace") as handle:
        merged = json.load(handle)
    assert merged["otherData"]["ranks"] == [1, 2]
