"""--merge-traces on mutated traces: a value of the wrong type or a non-finite number in any field
of any event (or of the metadata) either gets the event skipped and counted, or the file refused
with exit status 2 and one line naming it; never a traceback, never a file that is not strict JSON."""
import contextlib
import errno
import json
import os
import random

import pytest

from flagtree.profiler.distributed import merge_traces as mt
from flagtree.profiler.writers import chrome_trace
from flagtree.profiler.viewer.cli import main as viewer_main

from ranks.test_merge_traces import one_host_meta, trace
from support.json_check import loads_strict
from support.orjson_switch import orjson_installed, without_orjson

# Raw JSON text: NaN, Infinity and 1e999 are what broken writers put in files.
HOSTILE = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "{}", "[1]", "[[[[[]]]]]", "null", "true",
           '"x"', '"\\u001b]0;pwned\\u0007"', "-1", "18446744073709551617", "1.5", '{"a": NaN}', "[NaN]",
           "[" * 3000 + "]" * 3000]
EVENT_KEYS = ["pid", "tid", "ts", "dur", "ph", "id", "name", "args", "cat"]
META_KEYS = ["rank", "host", "pid", "trace_origin_monotonic_ns", "clock_base", "clock_offset_ns",
             "clock_offset_error_ns", "dropped_records", "lost_launches"]


def mutated(rng, n):
    """The JSON text of a trace with one to three fields replaced by hostile values."""
    document = trace(100 + n, 100 + n, flow_ids=(1, 2, 3), meta=one_host_meta(n % 3, 1000 * n, 100 + n))
    marks = {}
    for m in range(rng.randint(1, 3)):
        value = rng.choice(HOSTILE)
        mark = f"@@MUTATION{m}@@"
        marks[f'"{mark}"'] = value
        if rng.random() < 0.2:
            document["otherData"][rng.choice(META_KEYS)] = mark
        else:
            event = rng.choice(document["traceEvents"])
            event[rng.choice(EVENT_KEYS)] = mark
    text = json.dumps(document)
    for mark, value in marks.items():
        text = text.replace(mark, value)
    return text


def input_events(text):
    """The events of an input Python's reader accepts that the merge copies or skips: all but the
    well-formed metadata events, which it re-makes (None: not a Chrome trace)."""
    try:
        events = json.loads(text)["traceEvents"]
    except (ValueError, RecursionError):
        return None
    return [e for e in events if not (isinstance(e, dict) and e.get("ph") == "M" and mt.bad_event(e) is None)]


@pytest.mark.parametrize("reader", ["orjson", "json"])
def test_mutated_traces_are_merged_strictly_or_refused_in_one_line(tmp_path, capsys, monkeypatch, reader):
    if reader == "json":
        without_orjson(monkeypatch)
    elif not orjson_installed():
        pytest.skip("orjson is not installed")
    rng = random.Random(34)
    outcomes = {0: 0, 2: 0}
    for n in range(120):
        good = tmp_path / f"good{n}.rank0.chrome_trace"
        good.write_text(json.dumps(trace(1, 1, meta=one_host_meta(0, 5, 1))))
        bad = tmp_path / f"bad{n}.chrome_trace"
        text = mutated(rng, n)
        bad.write_text(text)
        out = tmp_path / f"merged{n}.json"
        code = mt.main(["-o", str(out), str(good), str(bad)])
        printed = capsys.readouterr()
        assert code in (0, 2), (text[:300], printed)
        outcomes[code] += 1
        assert "Traceback" not in printed.err + printed.out
        if code == 2:
            lines = printed.err.splitlines()
            assert len(lines) == 1 and str(bad) in lines[0], (text[:300], printed.err)
            assert not out.exists()
            continue
        document = loads_strict(out.read_text())
        merged_events = [e for e in document["traceEvents"] if e.get("ph") != "M"]
        skipped = document["otherData"]["skipped_events"]
        per_file = {m["file"]: m["skipped_events"] for m in document["otherData"]["merged_from"]}
        assert per_file[good.name] == 0 and skipped["total"] == per_file[bad.name]
        expected = input_events(text)
        if expected is not None:  # every event is in the output or counted as skipped
            good_events = input_events(good.read_text())
            assert len(merged_events) + skipped["total"] == len(expected) + len(good_events), text[:300]
        for e in merged_events:
            assert isinstance(e["tid"], int) and isinstance(e["pid"], int)
        if skipped["total"]:
            assert f"SKIPPED {skipped['total']} bad events" in printed.out and str(bad) in printed.out
            assert len(printed.out.splitlines()) == 1
    assert outcomes[0] and outcomes[2]  # both ways were taken: the mutations reach both


def test_a_nan_duration_is_skipped_counted_and_named(tmp_path, capsys, monkeypatch):
    without_orjson(monkeypatch)  # Python's reader accepts NaN: the event is read
    document = trace(1, 1, meta=one_host_meta(0, 5, 1))
    document["traceEvents"][4]["dur"] = "@@"
    path = tmp_path / "run.rank0.chrome_trace"
    path.write_text(json.dumps(document).replace('"@@"', "NaN"))
    assert mt.main(["-o", str(tmp_path / "m.json"), str(path)]) == 0
    out = capsys.readouterr().out
    assert f"SKIPPED 1 bad events (first: '{path}' event 4: 'dur' is nan, not a finite number)" in out
    names = [e["name"] for e in loads_strict((tmp_path / "m.json").read_text())["traceEvents"]]
    assert "step" not in names and names.count("k") == 2


def test_an_unhashable_thread_id_is_skipped_in_the_viewer_command_too(tmp_path, capsys):
    document = trace(1, 1, meta=one_host_meta(0, 5, 1))
    document["traceEvents"][5]["tid"] = {}
    document["traceEvents"][1]["tid"] = [1]  # a thread name of an unhashable thread
    path = tmp_path / "run.rank0.chrome_trace"
    path.write_text(json.dumps(document))
    assert viewer_main(["--merge-traces", str(tmp_path / "m.json"), str(path)]) == 0
    assert f"SKIPPED 2 bad events (first: '{path}' event 1: 'tid' is [...], not a number or a string)" \
        in capsys.readouterr().out
    ks = [e for e in loads_strict((tmp_path / "m.json").read_text())["traceEvents"] if e["name"] == "k"]
    assert len(ks) == 1  # event 5 was the first kernel


class _FullDisk:
    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("out", ["m.json", "missing/m.json"])
def test_a_write_that_fails_names_the_merged_file(tmp_path, capsys, monkeypatch, out):
    path = tmp_path / "run.rank0.chrome_trace"
    path.write_text(json.dumps(trace(1, 1, meta=one_host_meta(0, 5, 1))))
    if out == "m.json":  # the disk fills while the merge writes
        monkeypatch.setattr(chrome_trace, "atomic_file", lambda _path: contextlib.nullcontext(_FullDisk()))
    assert mt.main(["-o", str(tmp_path / out), str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"cannot write the merged trace '{tmp_path / out}'" in err
    assert ("No space left" if out == "m.json" else "No such file") in err
