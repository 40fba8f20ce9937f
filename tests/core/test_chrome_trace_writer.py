"""writers/chrome_trace.py, the one Chrome-trace writer on the Python side: the shape the native
trace has, strict JSON, streamed events, and nothing at the target when writing fails."""
import json
import os

import pytest

from flagtree.profiler.writers.chrome_trace import write_chrome_trace
from support.orjson_switch import orjson_installed, without_orjson


@pytest.mark.parametrize("orjson", [True, False])
def test_events_and_tail_are_strict_json(tmp_path, monkeypatch, orjson):
    if not orjson:
        without_orjson(monkeypatch)
    elif not orjson_installed():
        pytest.skip("orjson is not installed")
    path = tmp_path / "t.chrome_trace"
    events = ({"ph": "X", "name": f"k{i}", "ts": float(i), "dur": float("nan") if i == 1 else 1.0} for i in range(3))
    write_chrome_trace(path, events, otherData={"loss": float("inf"), "n": 3})
    document = json.loads(path.read_text())
    assert document["displayTimeUnit"] == "ns"
    assert [e["name"] for e in document["traceEvents"]] == ["k0", "k1", "k2"]
    assert document["traceEvents"][1]["dur"] is None and document["otherData"] == {"loss": None, "n": 3}


def test_no_events_and_no_tail_is_still_a_trace(tmp_path):
    path = tmp_path / "empty.chrome_trace"
    write_chrome_trace(path, [])
    assert json.loads(path.read_text()) == {"displayTimeUnit": "ns", "traceEvents": []}


def test_a_failure_while_streaming_leaves_the_previous_file(tmp_path):
    path = tmp_path / "t.chrome_trace"
    path.write_text("previous")

    def events():
        yield {"ph": "X", "name": "a"}
        raise RuntimeError("input went away")

    with pytest.raises(RuntimeError, match="went away"):
        write_chrome_trace(path, events())
    assert path.read_text() == "previous" and os.listdir(tmp_path) == ["t.chrome_trace"]
