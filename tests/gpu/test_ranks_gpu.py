"""Many ranks on the GPU machine: four processes on the one H200 (a gloo process group, the
nvidia backend recording real compiled Triton kernels), with the checks of the CPU test
tests/ranks/test_four_ranks.py: four rank files, gather to rank 0 without a shared folder,
clock offsets, rank 2 the slowest in the merged tree, one merged timeline with four processes
and no colliding flow ids, and the timeout naming rank 3. Skips cleanly without a GPU
(tests/gpu/conftest.py)."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "ranks"))
import test_four_ranks as four  # noqa: E402  (a module object only: its tests are not collected here)

# 4,096 blocks of 1,024 floats (rank 2: 16x): kernels long enough that rank 2 is slower by far
GPU_ENV = {"WORKER_BLOCKS": "4096", "FLAGTREE_GPU_TESTS": "1"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return four.launch(tmp_path_factory.mktemp("ranks_gpu"), four.WORLD, "never", GPU_ENV)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_the_nvidia_backend_recorded_each_rank(run):
    _, folders = run
    for rank in range(four.WORLD):
        with open(folders[rank] / f"run.rank{rank}.meta.json") as handle:
            meta = json.load(handle)
        assert meta["backend"] == "nvidia" and meta["kernel_records"] == 3
        assert meta["lost_launches"] == 0 and meta["dropped_records"] == 0


def test_each_rank_writes_its_own_rank_files(run):
    four.test_each_rank_writes_its_own_rank_files(run)


def test_gather_brings_every_rank_to_rank_0_without_a_shared_folder(run):
    four.test_gather_brings_every_rank_to_rank_0_without_a_shared_folder(run)


def test_clock_offsets_measured_at_the_gather(run):
    four.test_clock_offsets_measured_at_the_gather(run)


def test_the_merged_tree_names_rank_2_as_the_slowest(run, capsys):
    four.test_the_merged_tree_names_rank_2_as_the_slowest(run, capsys)


def test_gather_writes_one_merged_timeline(run):
    four.test_gather_writes_one_merged_timeline(run)


def test_the_viewer_merges_the_rank_traces(run, capsys, tmp_path):
    four.test_the_viewer_merges_the_rank_traces(run, capsys, tmp_path)


def test_a_rank_that_never_finalizes_gives_the_timeout_message(run):
    four.test_a_rank_that_never_finalizes_gives_the_timeout_message(run)
