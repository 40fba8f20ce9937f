"""--merge-traces on integers no float can hold (400 digits): in an event's time the event is
skipped and counted, in the clock metadata the fact is dropped (the trace keeps its own times);
never an OverflowError."""
import json

import pytest

from flagtree.profiler.distributed import merge_traces as mt
from flagtree.profiler.writers import chrome_trace

from ranks.test_merge_traces import one_host_meta, trace

HUGE = "1" + "0" * 400


@pytest.fixture(params=["orjson", "json"])
def reader(request, monkeypatch):
    """Python's reader reads such numbers as ints; orjson refuses the file as not JSON."""
    if request.param == "json":
        monkeypatch.setattr(mt, "_orjson", None)
        monkeypatch.setattr(chrome_trace, "_orjson", None)
    elif mt._orjson is None:
        pytest.skip("orjson is not installed")
    return request.param


def merged_or_refused(code, printed, reader, path):
    """True when merged; a refusal (orjson only) is one line naming the file."""
    assert "Traceback" not in printed.err + printed.out, printed.err
    if reader == "orjson" and code == 2:
        lines = printed.err.splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and "not valid JSON" in lines[0]
        return False
    assert code == 0, printed.err
    return True


def write(path, document, marks):
    text = json.dumps(document)
    for mark, value in marks.items():
        text = text.replace(f'"{mark}"', value)
    path.write_text(text)


@pytest.mark.parametrize("key", ["ts", "dur"])
@pytest.mark.parametrize("sign", ["", "-"])
def test_an_event_time_beyond_float_range_is_skipped_and_counted(tmp_path, capsys, reader, key, sign):
    document = trace(1, 1, meta=one_host_meta(0, 5, 1))
    document["traceEvents"][4][key] = "@@"
    path = tmp_path / "run.rank0.chrome_trace"
    write(path, document, {"@@": sign + HUGE})
    code = mt.main(["-o", str(tmp_path / "m.json"), str(path)])
    printed = capsys.readouterr()
    if not merged_or_refused(code, printed, reader, path):
        return
    assert "SKIPPED 1 bad events" in printed.out and f"event 4: '{key}' is" in printed.out
    merged = json.loads((tmp_path / "m.json").read_text())
    assert merged["otherData"]["skipped_events"]["total"] == 1


@pytest.mark.parametrize("fact", ["trace_origin_monotonic_ns", "clock_offset_ns", "clock_offset_error_ns",
                                  "clock_base.realtime_ns", "clock_base.monotonic_ns", "clock_base.error_ns"])
def test_a_clock_fact_beyond_int64_is_no_clock_fact(tmp_path, capsys, reader, fact):
    paths = []
    for rank in (0, 1):
        meta = one_host_meta(rank, 5 + rank, 1 + rank)
        meta["host"] = f"h{rank}"  # two hosts: the wall clocks and offsets are read
        meta["clock_offset_ns"], meta["clock_offset_error_ns"] = 0, 0
        if rank == 1:
            holder = meta["clock_base"] if "." in fact else meta
            holder[fact.split(".")[-1]] = "@@"
        path = tmp_path / f"run.rank{rank}.chrome_trace"
        write(path, trace(1, 1, meta=meta), {"@@": HUGE})
        paths.append(str(path))
    code = mt.main(["-o", str(tmp_path / "m.json"), *paths])
    if not merged_or_refused(code, capsys.readouterr(), reader, paths[1]):
        return
    merged = json.loads((tmp_path / "m.json").read_text())
    assert all(abs(e.get("ts", 0)) < 1e300 for e in merged["traceEvents"])
