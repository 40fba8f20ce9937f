"""Merging per-rank Chrome traces: hand-made traces in the layout our writer uses, with clock
metadata whose alignment is known, colliding flow ids and losses."""
import json
import os

import pytest

from flagtree.profiler.distributed.merge_traces import DEVICE_TID_BASE, FLOW_NAMESPACE, main, merge_traces

DEVICE_PID = 1 << 32


def trace(pid, tid, flow_ids=(1, 2), meta=None, ts0=10.0):
    events = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"Host process {pid}"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"thread {tid}"}},
        {"ph": "M", "name": "process_name", "pid": DEVICE_PID, "args": {"name": "Device 0"}},
        {"ph": "M", "name": "thread_name", "pid": DEVICE_PID, "tid": 7, "args": {"name": "stream 7"}},
        {"ph": "X", "cat": "scope", "name": "step", "pid": pid, "tid": tid, "ts": ts0, "dur": 100.0},
    ]
    for n, flow in enumerate(flow_ids):
        at = ts0 + 10 * n
        events += [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": DEVICE_PID, "tid": 7, "ts": at + 5, "dur": 3.0},
            {"ph": "X", "cat": "launch", "name": "launch k", "pid": pid, "tid": tid, "ts": at, "dur": 1.0},
            {"ph": "s", "cat": "launch", "name": "launch", "id": flow, "pid": pid, "tid": tid, "ts": at},
            {"ph": "f", "bp": "e", "cat": "launch", "name": "launch", "id": flow, "pid": DEVICE_PID, "tid": 7,
             "ts": at + 5},
        ]
    return {"displayTimeUnit": "ns", "otherData": meta or {}, "traceEvents": events}


def put(path, document):
    path.write_text(json.dumps(document))
    return path


def merged(path):
    with open(path) as handle:
        return json.load(handle)  # strict JSON: json.load rejects nothing here, NaN is checked below


def by_phase(document, phase):
    return [e for e in document["traceEvents"] if e.get("ph") == phase]


def one_host_meta(rank, origin, pid, **extra):
    return {"rank": rank, "host": "h1", "pid": pid, "trace_origin_monotonic_ns": origin,
            "clock_base": {"realtime_ns": 10**18 + origin, "monotonic_ns": origin, "error_ns": 5}, **extra}


def test_one_host_aligns_on_the_shared_monotonic_clock(tmp_path):
    a = put(tmp_path / "run.rank0.chrome_trace", trace(100, 100, meta=one_host_meta(0, 1_000_000, 100)))
    b = put(tmp_path / "run.rank1.chrome_trace", trace(200, 200, meta=one_host_meta(1, 3_500_000, 200)))
    other = merge_traces([str(a), str(b)], str(tmp_path / "m.json"))
    doc = merged(tmp_path / "m.json")
    assert other["clock"] == {"method": "one host: CLOCK_MONOTONIC shared by every rank", "error_ns": 0}
    scopes = {e["pid"]: e["ts"] for e in by_phase(doc, "X") if e["cat"] == "scope"}
    assert scopes == {1: 10.0, 2: 10.0 + 2500.0}  # rank 1 started 2.5 ms later
    assert doc["baseTimeNanoseconds"] == 10**18 + 1_000_000


def test_several_hosts_use_the_measured_offsets_and_state_the_error(tmp_path):
    meta0 = {"rank": 0, "host": "a", "pid": 5, "trace_origin_monotonic_ns": 4_000,
             "clock_base": {"realtime_ns": 10**12, "monotonic_ns": 5_000, "error_ns": 10},
             "clock_offset_ns": 0, "clock_offset_error_ns": 0}
    meta1 = {"rank": 1, "host": "b", "pid": 5, "trace_origin_monotonic_ns": 80_000,
             "clock_base": {"realtime_ns": 10**12 + 500_000, "monotonic_ns": 90_000, "error_ns": 20},
             "clock_offset_ns": -200_000, "clock_offset_error_ns": 300}
    a = put(tmp_path / "run.rank0.chrome_trace", trace(5, 5, meta=meta0))
    b = put(tmp_path / "run.rank1.chrome_trace", trace(5, 5, meta=meta1))
    other = merge_traces([str(tmp_path)], str(tmp_path / "m.json"))
    doc = merged(tmp_path / "m.json")
    # t=0 of rank 1 on rank 0's wall clock: 1e12 + 500 us - 10 us - 200 us = rank 0's + 291 us
    assert [f["shift_us"] for f in other["merged_from"]] == [0.0, 291.0]
    assert other["clock"]["error_ns"] == 320
    assert "offsets measured at the gather" in other["clock"]["method"]
    assert doc["baseTimeNanoseconds"] == 10**12 - 1_000
    assert a.exists() and b.exists()


def test_without_offsets_several_hosts_are_said_to_be_unsynchronised(tmp_path):
    for rank, host in ((0, "a"), (1, "b")):
        meta = {"rank": rank, "host": host, "trace_origin_monotonic_ns": 1,
                "clock_base": {"realtime_ns": 100, "monotonic_ns": 1, "error_ns": 0}}
        put(tmp_path / f"run.rank{rank}.chrome_trace", trace(9, 9, meta=meta))
    other = merge_traces([str(tmp_path)], str(tmp_path / "m.json"))
    assert "NOT synchronised" in other["clock"]["method"]


def test_a_process_per_rank_and_flow_ids_that_cannot_collide(tmp_path):
    paths = []
    for rank in range(3):  # every input uses flow ids 1 and 2, and the same pid
        meta = one_host_meta(rank, 1_000, 42)
        paths.append(str(put(tmp_path / f"run.rank{rank}.chrome_trace", trace(42, 42, meta=meta))))
    merge_traces(paths, str(tmp_path / "m.json"))
    doc = merged(tmp_path / "m.json")
    names = {e["pid"]: e["args"]["name"] for e in by_phase(doc, "M") if e["name"] == "process_name"}
    assert names == {r + 1: f"rank {r} · h1 · pid 42" for r in range(3)}
    starts, finishes = by_phase(doc, "s"), by_phase(doc, "f")
    assert len({e["id"] for e in starts}) == len(starts) == 6
    assert sorted(e["id"] for e in starts) == sorted(e["id"] for e in finishes)
    assert {e["id"] // FLOW_NAMESPACE for e in starts} == {0, 1, 2}
    for start in starts:  # each arrow still runs inside one rank's process
        (finish,) = [f for f in finishes if f["id"] == start["id"]]
        assert finish["pid"] == start["pid"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in by_phase(doc, "M") if e["name"] == "thread_name"}
    assert threads[(1, 42)] == "thread 42" and threads[(1, DEVICE_TID_BASE)] == "Device 0 · stream 7"
    assert {e["pid"] for e in doc["traceEvents"]} == {1, 2, 3}


def test_parts_of_a_rank_share_its_process_and_losses_add_per_rank(tmp_path):
    for part in (1, 2):
        put(tmp_path / f"run.rank1.part{part}.chrome_trace", trace(7, 7, flow_ids=(1,)))
    (tmp_path / "run.rank1.meta.json").write_text(json.dumps(
        {**one_host_meta(1, 500, 7), "lost_launches": 3, "dropped_records": 2}))
    put(tmp_path / "run.rank0.chrome_trace", trace(8, 8, meta=one_host_meta(0, 500, 8, lost_launches=1)))
    other = merge_traces([str(tmp_path)], str(tmp_path / "m.json"))
    assert other["ranks"] == [0, 1]
    assert other["losses"] == {"per_rank": {"0": {"dropped_records": 0, "lost_launches": 1},
                                            "1": {"dropped_records": 2, "lost_launches": 3}},
                               "total": {"dropped_records": 2, "lost_launches": 4}}
    doc = merged(tmp_path / "m.json")
    kernels = [e for e in by_phase(doc, "X") if e["cat"] == "kernel"]
    assert sorted({(e["pid"], e["tid"]) for e in kernels}) == [(1, DEVICE_TID_BASE), (2, DEVICE_TID_BASE)]
    labels = {e["pid"]: e["args"]["labels"] for e in by_phase(doc, "M") if e["name"] == "process_labels"}
    assert labels[2] == "dropped records: 2, lost launches: 3"
    assert len({e["id"] for e in by_phase(doc, "s")}) == 4  # ids 1, 2 of rank 0; id 1 in both parts of rank 1


def test_output_replaces_a_planted_symlink_and_the_command_reports(tmp_path, capsys):
    put(tmp_path / "run.rank0.chrome_trace", trace(1, 1, meta=one_host_meta(0, 1, 1)))
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    os.symlink(victim, tmp_path / "out.json")
    assert main(["-o", str(tmp_path / "out.json"), str(tmp_path / "run.rank0.chrome_trace")]) == 0
    assert not os.path.islink(tmp_path / "out.json") and victim.read_text() == "keep"
    assert "merged 1 traces of 1 ranks" in capsys.readouterr().out
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []


def test_bad_input_is_one_error_line(tmp_path, capsys):
    (tmp_path / "x.chrome_trace").write_text("{not json")
    assert main(["-o", str(tmp_path / "o.json"), str(tmp_path / "x.chrome_trace")]) == 2
    assert "is not valid JSON" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def test_traces_without_clock_metadata_keep_their_times(tmp_path):
    put(tmp_path / "a.chrome_trace", trace(1, 1))
    put(tmp_path / "b.chrome_trace", trace(2, 2, ts0=99.0))
    other = merge_traces([str(tmp_path / "a.chrome_trace"), str(tmp_path / "b.chrome_trace")],
                         str(tmp_path / "m.json"))
    assert other["clock"]["method"].startswith("none")
    assert "baseTimeNanoseconds" not in merged(tmp_path / "m.json")


@pytest.mark.parametrize("argv", [["--merge-traces"]])
def test_the_viewer_merges_traces_too(tmp_path, capsys, argv):
    from flagtree.profiler.viewer.cli import main as viewer_main

    put(tmp_path / "run.rank0.chrome_trace", trace(1, 1, meta=one_host_meta(0, 1, 1)))
    put(tmp_path / "run.rank1.chrome_trace", trace(2, 2, meta=one_host_meta(1, 1, 2)))
    assert viewer_main(argv + [str(tmp_path / "m.json"), str(tmp_path)]) == 0
    assert "of 2 ranks" in capsys.readouterr().out
    assert viewer_main(argv + [str(tmp_path / "m2.json"), str(tmp_path / "missing.chrome_trace")]) == 2
    assert "cannot read trace" in capsys.readouterr().err


def test_a_foreign_trace_keeps_its_host_threads_apart_from_its_device_tracks(tmp_path, capsys):
    # no metadata, device "processes" with small pids (as Kineto writes them)
    doc = {"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 4321, "args": {"name": "python"}},
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
        {"ph": "X", "name": "cpu op", "pid": 4321, "tid": 7, "ts": 1.0, "dur": 1.0},
        {"ph": "X", "name": "kernel", "pid": 0, "tid": 7, "ts": 2.0, "dur": 1.0}]}
    put(tmp_path / "odd\x1bname.rank0.chrome_trace", doc)
    out_path = tmp_path / "out" / "m\x1b[31m.json"  # printed back: escaped, not a colour code
    out_path.parent.mkdir()
    assert main(["-o", str(out_path), str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "m\\x1b[31m.json" in printed
    events = [e for e in merged(out_path)["traceEvents"] if e["ph"] == "X"]
    assert {e["name"]: e["tid"] for e in events} == {"cpu op": 7, "kernel": DEVICE_TID_BASE}


def test_a_trace_reads_its_own_metadata_beside_a_tree_of_the_same_name(tmp_path):
    # a tree session named like the trace took run.rank0.meta.json; the trace's is
    # run.rank0.chrome_trace.meta.json (paths.output_paths), with the trace's own clock origin
    a = put(tmp_path / "run.rank0.chrome_trace", trace(100, 100))
    (tmp_path / "run.rank0.meta.json").write_text(json.dumps(one_host_meta(0, 9_000_000, 100, data="tree")))
    (tmp_path / "run.rank0.chrome_trace.meta.json").write_text(json.dumps(one_host_meta(0, 1_000_000, 100)))
    b = put(tmp_path / "run.rank1.chrome_trace", trace(200, 200, meta=one_host_meta(1, 3_500_000, 200)))
    merge_traces([str(a), str(b)], str(tmp_path / "m.json"))
    doc = merged(tmp_path / "m.json")
    scopes = {e["pid"]: e["ts"] for e in by_phase(doc, "X") if e["cat"] == "scope"}
    assert scopes == {1: 10.0, 2: 10.0 + 2500.0}  # the tree's origin (9 ms) would put rank 1 first
    assert doc["baseTimeNanoseconds"] == 10**18 + 1_000_000
