"""One run, several outputs (`data="tree,trace"`): one session per kind over the same launches,
one run id in every file and one metadata file that lists them all; a reader never takes the
metadata or the timeline of another run for this one's (run_id.py)."""
import json
import shutil

import pytest

import flagtree.profiler as profiler
from flagtree.profiler.run_group import split_data
from flagtree.profiler.session import open_sessions
from flagtree.profiler.run_id import mismatch, run_id_of
from flagtree.profiler.viewer.rank_merge import metadata_of, metadata_with_problem
from support.kernels import launch_add, tensors
from support.profiles import find, load_json, load_tree

hatchet = pytest.importorskip("hatchet")


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def _run(path, data, launches=3):
    x, y, out = tensors()
    sid = profiler.start(str(path), data=data)
    with profiler.scope("step"):
        for _ in range(launches):
            launch_add(x, y, out)
    profiler.finalize(sid)


def _trace_kernels(path):
    return [e for e in load_json(path)["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]


def test_tree_and_trace_from_one_session_share_one_metadata(tmp_path):
    _run(tmp_path / "r", "tree,trace")
    meta = load_json(tmp_path / "r.meta.json")
    assert meta["data"] == "tree,trace"
    assert meta["outputs"] == [str(tmp_path / "r.hatchet"), str(tmp_path / "r.chrome_trace")]
    assert not (tmp_path / "r.chrome_trace.meta.json").exists()
    assert run_id_of(tmp_path / "r.hatchet") == meta["run_id"] == run_id_of(tmp_path / "r.chrome_trace")
    assert load_json(tmp_path / "r.chrome_trace")["otherData"]["run_id"] == meta["run_id"]
    # Both saw the same launches.
    root, _ = load_tree(tmp_path / "r.hatchet")
    assert find(root, "step", "add_kernel")["metrics"]["count"] == 3
    assert [e["name"] for e in _trace_kernels(tmp_path / "r.chrome_trace")] == ["add_kernel"] * 3
    assert open_sessions() == []


def test_three_kinds_and_pausing_reach_every_kind(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "p"), data="trace,tree,perfetto")
    launch_add(x, y, out)
    profiler.deactivate(sid)
    launch_add(x, y, out)  # paused: in no output
    profiler.activate(sid)
    launch_add(x, y, out)
    profiler.finalize(sid)
    meta = load_json(tmp_path / "p.meta.json")
    assert meta["data"] == "trace,tree,perfetto" and len(meta["outputs"]) == 3
    assert len(_trace_kernels(tmp_path / "p.chrome_trace")) == 2
    assert find(load_tree(tmp_path / "p.hatchet")[0], "add_kernel")["metrics"]["count"] == 2
    assert (tmp_path / "p.pftrace").stat().st_size > 0


def test_parts_of_a_run_are_written_for_every_kind(tmp_path):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "q"), data="tree,trace")
    launch_add(x, y, out)
    written = profiler.flush_part(sid)
    launch_add(x, y, out)
    profiler.finalize(sid)
    assert written == [str(tmp_path / "q.part1.hatchet"), str(tmp_path / "q.part1.chrome_trace")]
    meta = load_json(tmp_path / "q.meta.json")
    assert sorted(meta["parts"]) == sorted(meta["outputs"]) == sorted(
        str(tmp_path / f"q.part{k}{ext}") for k in (1, 2) for ext in (".hatchet", ".chrome_trace"))
    assert {run_id_of(p) for p in meta["parts"]} == {meta["run_id"]}


def test_data_kinds_are_checked_before_anything_starts(tmp_path):
    assert split_data("tree, trace") == ["tree", "trace"]
    for bad, message in (("tree,graph", "unknown data 'graph'"), ("tree,tree", "names a kind twice")):
        with pytest.raises(ValueError, match=message):
            profiler.start(str(tmp_path / "x"), data=bad)
    assert open_sessions() == []
    sid = profiler.start(str(tmp_path / "y"), data="tree,trace")
    with pytest.raises(ValueError, match="already open"):
        profiler.start(str(tmp_path / "y"), data="trace")
    profiler.finalize(sid)


def test_hatchet_and_proton_readers_pass_over_the_run_id(tmp_path):
    _run(tmp_path / "h", "tree")
    data = load_json(tmp_path / "h.hatchet")
    assert list(data[0])[0] == "run_id"  # first in the root object: a reader finds it in the head
    frame = hatchet.GraphFrame.from_literal([data[0]])  # as Proton's viewer reads it
    assert "run_id" not in frame.dataframe.columns and "add_kernel" in set(frame.dataframe["name"])
    assert all(isinstance(info, dict) for info in data[1].values())  # device_info stays devices only


def test_metadata_of_another_run_is_not_used_and_said(tmp_path):
    _run(tmp_path / "a", "tree")
    first = load_json(tmp_path / "a.meta.json")
    assert metadata_of(str(tmp_path / "a.hatchet"))["run_id"] == first["run_id"]
    shutil.copy(tmp_path / "a.hatchet", tmp_path / "keep.hatchet")
    _run(tmp_path / "a", "tree", launches=1)  # a second run under the same name
    shutil.copy(tmp_path / "keep.hatchet", tmp_path / "a.hatchet")  # the first run's tree, the second's metadata
    meta, problem = metadata_with_problem(str(tmp_path / "a.hatchet"))
    assert meta == {} and "belongs to another run" in problem and first["run_id"] in problem
    # A file without a run id (Proton's, an older version's) is taken as it is.
    assert mismatch(str(tmp_path / "nothing.hatchet"), {"run_id": "0" * 32}, "m") is None
    assert json.loads(json.dumps(load_json(tmp_path / "a.meta.json")))["run_id"] != first["run_id"]


def test_run_id_of_a_large_trace_is_read_from_its_head_or_its_tail(tmp_path):
    event = '{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":0,"ts":1.0,"dur":1.0}'
    events = ",\n".join([event] * 40_000)  # about 3 MB: past what the tail read covers
    head = tmp_path / "head.chrome_trace"
    head.write_text('{"displayTimeUnit":"ns","otherData":{"run_id":"%s"},"traceEvents":[\n%s\n]}' % ("1" * 32, events))
    tail = tmp_path / "tail.chrome_trace"
    tail.write_text('{"displayTimeUnit":"ns","traceEvents":[\n%s\n],"otherData":{"run_id":"%s"}}' % (events, "2" * 32))
    assert (run_id_of(head), run_id_of(tail)) == ("1" * 32, "2" * 32)
