"""Four real processes, as torchrun starts them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT),
over a gloo process group, running real Triton kernels in the interpreter; rank 2 is slow.
Each rank writes only in its own folder; FLAGTREE_PROFILER_GATHER=1 brings every rank's files to
rank 0. A second round leaves rank 3 unfinalized, so that gather must time out naming it.
The four processes run once for the module (about 10 s on 2 busy cores); each test checks one
part of what they left."""
import json
import os
import socket
import subprocess
import sys

import pytest

from flagtree.profiler.viewer.cli import main as viewer

WORLD = 4
WORKER = os.path.join(os.path.dirname(__file__), "worker.py")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(tmp, world, scenario, extra_env=None):
    """Runs `world` workers, each in its own folder; returns ({rank: report}, {rank: folder})."""
    port, procs, folders = free_port(), {}, {}
    for rank in range(world):
        folders[rank] = tmp / f"rank{rank}"
        folders[rank].mkdir()
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), FLAGTREE_PROFILER_GATHER="1",
                   PYTHONWARNINGS="default", **(extra_env or {}))
        procs[rank] = subprocess.Popen([sys.executable, WORKER, str(folders[rank]), scenario], env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    reports = {}
    for rank, proc in procs.items():
        out, _ = proc.communicate(timeout=180)
        lines = [line for line in out.splitlines() if line.startswith("REPORT ")]
        assert proc.returncode == 0 and lines, f"rank {rank} failed:\n{out[-3000:]}"
        reports[rank] = json.loads(lines[-1][len("REPORT "):])
    return reports, folders


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return launch(tmp_path_factory.mktemp("ranks"), WORLD, "never")


def read_json(path):
    with open(path) as handle:
        return json.load(handle)


def test_each_rank_writes_its_own_rank_files(run):
    _, folders = run
    for rank in range(1, WORLD):
        own = sorted(os.listdir(folders[rank]))
        # the trace session shares the tree's name, so its metadata takes its extension (paths.py)
        expected = [f"run.rank{rank}.{ext}" for ext in ("chrome_trace", "hatchet", "meta.json",
                                                        "chrome_trace.meta.json")]
        if rank != 3:
            expected += [f"run_late.rank{rank}.{ext}" for ext in ("hatchet", "meta.json")]
        assert own == sorted(expected)
        meta = read_json(folders[rank] / f"run.rank{rank}.meta.json")
        assert (meta["rank"], meta["world_size"], meta["local_rank"], meta["rank_source"]) == \
            (rank, WORLD, rank, "torchrun")
        assert meta["host"] == socket.gethostname() and meta["clock_base"]["realtime_ns"] > 0


def test_gather_brings_every_rank_to_rank_0_without_a_shared_folder(run):
    _, folders = run
    for rank in range(WORLD):
        for ext in ("hatchet", "chrome_trace", "meta.json"):
            gathered = folders[0] / f"run.rank{rank}.{ext}"
            assert gathered.read_bytes() == (folders[rank] / gathered.name).read_bytes()
    summary = read_json(folders[0] / "run.rank0.meta.json")["gather"]
    assert summary["ranks"] == [0, 1, 2, 3] and summary["missing"] == []


def test_clock_offsets_measured_at_the_gather(run):
    _, folders = run
    for rank in range(1, WORLD):
        meta = read_json(folders[0] / f"run.rank{rank}.meta.json")
        assert meta["clock_reference_rank"] == 0 and "ping-pongs" in meta["clock_sync"]
        # one host, one clock: the true offset is 0, so the measured one lies within its error
        assert 0 < meta["clock_offset_error_ns"] < 50_000_000
        assert abs(meta["clock_offset_ns"]) <= meta["clock_offset_error_ns"] + 1_000


def test_the_merged_tree_names_rank_2_as_the_slowest(run, capsys):
    _, folders = run
    files = sorted(str(p) for p in folders[0].glob("run.rank*.hatchet"))
    assert len(files) == WORLD
    assert viewer(["-m", "time/ms,time/ms:max,count", *files]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header == ["time/ms", "time/ms:max", "time/ms:slowest", "count"]
    kernel = next(line.split() for line in out.splitlines() if line.endswith("add_kernel"))
    assert kernel[2] == "2" and kernel[3] == str(3 * WORLD)
    per_rank = [read_json(f)[0] for f in files]
    kernel_ns = [next(k for s in r["children"] for k in s["children"])["metrics"]["time (ns)"] for r in per_rank]
    assert max(range(WORLD), key=lambda r: kernel_ns[r]) == 2
    assert float(kernel[0]) == pytest.approx(sum(kernel_ns) / 1e6, abs=1e-3)
    assert float(kernel[1]) == pytest.approx(kernel_ns[2] / 1e6, abs=1e-3)
    assert "ranks: 4 (0-3) from 4 files; no records lost" in out


def check_merged_trace(path, folders):
    doc = read_json(path)
    events = doc["traceEvents"]
    names = sorted(e["args"]["name"] for e in events if e.get("name") == "process_name")
    host = socket.gethostname()
    assert [n.split(" · ")[:2] for n in names] == [[f"rank {r}", host] for r in range(WORLD)]
    assert {e["pid"] for e in events} == {1, 2, 3, 4}
    starts = [e["id"] for e in events if e.get("ph") == "s"]
    assert len(starts) == len(set(starts)) == 3 * WORLD
    assert sorted(starts) == sorted(e["id"] for e in events if e.get("ph") == "f")
    base = doc["baseTimeNanoseconds"]
    for rank in range(WORLD):  # aligned times fall inside that rank's session, by its own wall clock
        meta = read_json(folders[rank] / f"run.rank{rank}.meta.json")
        kernels = [e for e in events if e.get("pid") == rank + 1 and e.get("cat") == "kernel"]
        assert len(kernels) == 3
        first, last = min(e["ts"] for e in kernels), max(e["ts"] + e["dur"] for e in kernels)
        assert meta["start_time_ns"] - 1e6 <= base + first * 1e3 <= base + last * 1e3 <= meta["stop_time_ns"] + 1e6
    assert doc["otherData"]["clock"]["method"].startswith("one host")
    return doc


def test_gather_writes_one_merged_timeline(run):
    _, folders = run
    check_merged_trace(folders[0] / "run.merged.chrome_trace", folders)


def test_the_viewer_merges_the_rank_traces(run, capsys, tmp_path):
    _, folders = run
    files = sorted(str(p) for p in folders[0].glob("run.rank*.chrome_trace"))
    assert viewer(["--merge-traces", str(tmp_path / "m.json"), *files]) == 0
    assert "of 4 ranks" in capsys.readouterr().out
    check_merged_trace(tmp_path / "m.json", folders)


def test_a_rank_that_never_finalizes_gives_the_timeout_message(run):
    reports, folders = run
    (message,) = reports[0]["warnings"]
    assert "gather to rank 0 timed out after 3 s: rank 3 never arrived" in message
    assert 3.0 <= reports[0]["late_finalize_s"] < 15
    late = sorted(p for p in os.listdir(folders[0]) if p.startswith("run_late."))
    assert late == sorted(f"run_late.rank{r}.{ext}" for r in range(3) for ext in ("hatchet", "meta.json"))
    summary = read_json(folders[0] / "run_late.rank0.meta.json")["gather"]
    assert summary["ranks"] == [0, 1, 2] and summary["missing"] == [3]
    assert all(not reports[r]["warnings"] for r in (1, 2, 3))
