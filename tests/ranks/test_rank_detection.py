"""Rank detection, file naming, the FLAGTREE_PROFILER_RANKS subset and the metadata fields, in
this process (the launcher's variables set by hand); real kernels in Triton's interpreter."""
import json
import os
import socket
import time

import pytest

import flagtree.profiler as profiler
from flagtree.profiler.distributed import ranks
from flagtree.profiler import session, session_checks
from support.kernels import launch_add, tensors


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


@pytest.mark.parametrize("variables, expected", [
    ({"RANK": 3, "WORLD_SIZE": 8, "LOCAL_RANK": 1}, (3, 8, 1, "torchrun")),
    ({"OMPI_COMM_WORLD_RANK": 5, "OMPI_COMM_WORLD_SIZE": 6, "OMPI_COMM_WORLD_LOCAL_RANK": 2},
     (5, 6, 2, "mpirun (Open MPI)")),
    ({"PMI_RANK": 1, "PMI_SIZE": 2}, (1, 2, None, "PMI (MPICH)")),
    ({"SLURM_PROCID": 7, "SLURM_NTASKS": 16, "SLURM_LOCALID": 3}, (7, 16, 3, "srun")),
    # torchrun inside srun: RANK is the training rank
    ({"SLURM_PROCID": 0, "SLURM_NTASKS": 2, "RANK": 9, "WORLD_SIZE": 16}, (9, 16, None, "torchrun")),
])
def test_each_launcher_names_the_rank(launcher, variables, expected):
    launcher(**variables)
    assert tuple(ranks.current()) == expected
    assert ranks.output_base("out/run") == f"out/run.rank{expected[0]}"


def test_single_process_names_are_unchanged(launcher):
    assert ranks.current() is None
    assert ranks.output_base("run") == "run"
    launcher(RANK=0, WORLD_SIZE=1)  # torchrun --nproc_per_node=1
    assert ranks.output_base("run") == "run"
    launcher(SLURM_PROCID="junk")
    launcher(RANK="junk")
    assert ranks.current() is None


def test_subset_syntax():
    assert ranks.parse_subset("0,3-5") == ((0, 0), (3, 5))
    assert ranks.parse_subset(" 2 , 7-7 ") == ((2, 2), (7, 7))
    for bad in ("", "a", "3-", "-1", "5-3", "1,,2", "1-2-3"):
        with pytest.raises(ValueError, match="FLAGTREE_PROFILER_RANKS must list ranks and ranges"):
            ranks.parse_subset(bad)


def test_profiled_ranks_of_a_world(launcher):
    assert ranks.profiled_ranks(4) == [0, 1, 2, 3]
    launcher(FLAGTREE_PROFILER_RANKS="0,3-5")
    assert ranks.profiled_ranks(8) == [0, 3, 4, 5]


def test_a_left_out_rank_pays_nothing(launcher, tmp_path, monkeypatch):
    launcher(RANK=2, WORLD_SIZE=4, FLAGTREE_PROFILER_RANKS="0,3-5")

    def no_backend(*args, **kwargs):
        raise AssertionError("a left-out rank selected or started a backend")

    # what a disabled start() must never reach: backend selection, a backend, the native session
    monkeypatch.setattr(session_checks, "select_backend", no_backend)
    monkeypatch.setattr(session_checks, "get_backend", no_backend)
    monkeypatch.setattr(session.native.session, "session_create", no_backend)
    for _ in range(3):
        assert profiler.start(str(tmp_path / "x")) == -1
    assert session.open_sessions() == []
    profiler.finalize()
    assert os.listdir(tmp_path) == []


def test_a_chosen_rank_profiles_under_its_rank_name(launcher, tmp_path):
    launcher(RANK=3, WORLD_SIZE=4, LOCAL_RANK=1, FLAGTREE_PROFILER_RANKS="0,3-5")
    x, y, out = tensors()
    profiler.start(str(tmp_path / "run"))
    launch_add(x, y, out)
    profiler.finalize()
    assert sorted(os.listdir(tmp_path)) == ["run.rank3.hatchet", "run.rank3.meta.json"]
    meta = json.loads((tmp_path / "run.rank3.meta.json").read_text())
    assert (meta["rank"], meta["world_size"], meta["local_rank"]) == (3, 4, 1)
    assert meta["rank_source"] == "torchrun"
    assert meta["host"] == socket.gethostname() and meta["pid"] == os.getpid()


def test_a_bad_subset_is_an_error_at_start(launcher, tmp_path):
    launcher(RANK=1, WORLD_SIZE=2, FLAGTREE_PROFILER_RANKS="1-")
    with pytest.raises(ValueError, match="FLAGTREE_PROFILER_RANKS"):
        profiler.start(str(tmp_path / "run"))


def test_single_process_rank_zero_for_the_subset(launcher, tmp_path):
    launcher(FLAGTREE_PROFILER_RANKS="1")
    assert profiler.start(str(tmp_path / "run")) == -1
    launcher(FLAGTREE_PROFILER_RANKS="0")
    assert profiler.start(str(tmp_path / "run")) != -1


def test_clock_base_is_one_instant_on_both_clocks(launcher, tmp_path):
    x, y, out = tensors()
    profiler.start(str(tmp_path / "run"), data="trace")
    launch_add(x, y, out)
    profiler.finalize()
    meta = json.loads((tmp_path / "run.meta.json").read_text())
    base = meta["clock_base"]
    # now on both clocks, read the same way: the two differences agree to well under a ms
    real, mono = time.clock_gettime_ns(time.CLOCK_REALTIME), time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    assert abs((real - mono) - (base["realtime_ns"] - base["monotonic_ns"])) < 1_000_000
    assert 0 <= base["error_ns"] < 1_000_000
    assert (meta["rank"], meta["world_size"], meta["local_rank"]) == (0, 1, None)
    # the trace's t=0 is the session start on the monotonic clock, before the base was taken
    assert 0 < meta["trace_origin_monotonic_ns"] <= base["monotonic_ns"]
    trace = json.loads((tmp_path / "run.chrome_trace").read_text())
    assert trace["otherData"]["trace_origin_monotonic_ns"] == meta["trace_origin_monotonic_ns"]


def test_gather_without_a_process_group_warns_and_keeps_the_files(launcher, tmp_path):
    launcher(FLAGTREE_PROFILER_GATHER=1)
    x, y, out = tensors()
    profiler.start(str(tmp_path / "run"))
    launch_add(x, y, out)
    with pytest.warns(UserWarning, match="no torch.distributed process group"):
        profiler.finalize()
    assert sorted(os.listdir(tmp_path)) == ["run.hatchet", "run.meta.json"]


class _Group:
    """Stands in for torch.distributed with an initialised group (no launcher variables)."""

    def __init__(self, rank, world_size, initialised=True):
        self.rank, self.world_size, self.initialised = rank, world_size, initialised

    def is_available(self):
        return True

    def is_initialized(self):
        return self.initialised

    def get_rank(self):
        return self.rank

    def get_world_size(self):
        return self.world_size


def test_an_initialised_process_group_names_the_rank(launcher, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch.distributed", _Group(5, 8, initialised=False))
    assert ranks.current() is None  # not initialised yet: nothing, and nothing cached
    monkeypatch.setitem(sys.modules, "torch.distributed", _Group(5, 8))
    assert tuple(ranks.current()) == (5, 8, None, "torch.distributed")
    assert ranks.output_base("run") == "run.rank5"
    launcher(RANK=2, WORLD_SIZE=8)  # the launcher's variables win
    assert ranks.current().rank == 2


def test_gathered_payloads_round_trip_and_unsafe_names_are_refused(tmp_path):
    from flagtree.profiler.distributed import gather

    (tmp_path / "run.rank1.hatchet").write_bytes(b"[{}]")
    (tmp_path / "run.rank1.meta.json").write_text(json.dumps({"rank": 1}))
    payload = gather.pack_files(1, [str(tmp_path / "run.rank1.hatchet"), str(tmp_path / "run.rank1.meta.json")],
                                {"clock_offset_ns": -5})
    rank, files = gather.unpack_files(payload)
    assert rank == 1 and files[0] == ("run.rank1.hatchet", b"[{}]")
    assert json.loads(files[1][1])["clock_offset_ns"] == -5
    assert json.loads((tmp_path / "run.rank1.meta.json").read_text())["clock_offset_ns"] == -5  # both copies
    for bad in ("../evil", "a/b", "..", "x\x1b"):
        forged = json.dumps({"rank": 1, "files": [[bad, 1]]}).encode() + b"\nx"
        with pytest.raises(ValueError, match="refusing gathered file name"):
            gather.unpack_files(forged)
