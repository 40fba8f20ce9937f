"""Text metrics (a scope's "(pty)" or "(exc)" property given a str): the viewer and read() show
numbers only, so they leave texts out, on the native reader's path and the pure-Python one alike,
while the numbers beside them (numeric properties included) are read as before."""

import pytest

import flagtree.profiler as profiler
from flagtree.profiler.viewer import native_read, reader
from flagtree.profiler.viewer.nodes import Node
from support.kernels import launch_add, tensors
from viewer_helpers import H100, both_paths, captured_run, kernel, node


def _profile(note="a \"quoted\" text"):
    step = node("step", {"model": "llama", "batch": 8, "note": note},
                kernel("gemm", 3000, flops16=10**9), node("inner", {"tag": "x"}, kernel("add", 1000)))
    return [node("ROOT", {}, step), H100]


def test_texts_are_left_out_the_same_on_both_paths(write_profile, monkeypatch):
    path = write_profile(_profile())
    if reader.NATIVE_READ is not None:  # it takes texts without escapes (those it leaves to reader.py)
        plain = write_profile(_profile("plain text"), name="plain.hatchet")
        seen = set()
        with open(plain, "rb") as handle:
            found = reader.NATIVE_READ(handle.read(), Node, seen)
        assert found is not None and "model" not in found[0].children["step"].metrics
        assert "batch" in seen and not {"model", "note", "tag"} & seen  # names of numbers only
        native_read.unlink(found[0])
    for argv in (["-m", "time/ns,batch", path], ["-l", path], ["-m", "time/%", "--print-sorted", path]):
        fast, slow = both_paths(monkeypatch, argv)
        assert fast == slow and fast[0] == 0, (argv, fast, slow)
    status, out, _ = fast = captured_run(["-m", "time/ns,batch", path])
    assert "4000" in out and "8" in out and "llama" not in out and "quoted" not in out
    listed = captured_run(["-l", path])[1]
    assert "batch" in listed and "model" not in listed and "tag" not in listed


def test_a_text_metric_is_no_column(write_profile, monkeypatch):
    path = write_profile(_profile())
    fast, slow = both_paths(monkeypatch, ["-m", "model", path])
    assert fast == slow and fast[0] == 2 and "metric 'model' is not in profile" in fast[2]


def test_a_text_in_a_time_is_still_a_broken_profile(write_profile, monkeypatch):
    path = write_profile([node("ROOT", {}, node("s", {"time (ns)": "fast", "tag": "ok"})), {}])
    fast, slow = both_paths(monkeypatch, ["-m", "time/ns", path])
    assert fast == slow and fast[0] == 2 and "metric 'time (ns)' of node 's' is not a number" in fast[2]


def test_read_and_its_dataframe_pass_over_texts(write_profile):
    pytest.importorskip("pandas")
    profile = profiler.read(write_profile(_profile()))
    assert "batch" in profile.stored_metrics and "model" not in profile.stored_metrics
    frame = profile.to_dataframe()
    assert "model" not in frame.columns and "note" not in frame.columns
    step = frame[frame["name"] == "step"].iloc[0]
    assert step["time/ms"] == pytest.approx(0.004)


def test_the_viewer_reads_a_run_with_text_properties_and_its_parts(tmp_path, monkeypatch):
    x, y, out = tensors()
    base = tmp_path / "run"
    sid = profiler.start(str(base))
    with profiler.scope("step", {"model (pty)": "llama", "batch (pty)": 8, "phase (exc)": "prefill"}):
        launch_add(x, y, out)
    profiler.flush_part(sid, wait=True)
    with profiler.scope("step", {"model (pty)": "mistral", "bytes": 64}):
        launch_add(x, y, out)
    profiler.finalize(sid)
    for path, shown in (("run.part1.hatchet", "count,batch"), ("run.part2.hatchet", "count,bytes"),
                        ("run.hatchet", "count,batch,bytes")):
        fast, slow = both_paths(monkeypatch, ["-m", shown, tmp_path / path])
        assert fast == slow and fast[0] == 0, (path, fast)
        assert "llama" not in fast[1] and "mistral" not in fast[1] and "step" in fast[1]
    merged = captured_run(["-m", "count", tmp_path / "run.hatchet"])[1]  # the two parts, merged
    assert any(line.split()[:1] == ["2"] and "step" in line for line in merged.splitlines())
    profile = profiler.read(str(tmp_path / "run.hatchet"))
    assert {"batch", "bytes", "count"} <= set(profile.stored_metrics)
    assert not {"model", "phase"} & set(profile.stored_metrics)


def test_a_metric_written_as_null_is_left_out_as_a_text_is(tmp_path, monkeypatch):
    x, y, out = tensors()
    base = tmp_path / "nan"
    profiler.start(str(base))
    # NaN, the infinities and a sum past float64 are written as null (strict JSON)
    with profiler.scope("step", {"nan": float("nan"), "big": 1e308, "bytes": 64, "peak (pty)": float("inf")}):
        launch_add(x, y, out)
    with profiler.scope("step", {"big": 1e308}):
        pass
    profiler.finalize()
    fast, slow = both_paths(monkeypatch, ["-m", "count,bytes", base.with_suffix(".hatchet")])
    assert fast == slow and fast[0] == 0, fast
    assert any(line.split() == ["1", "64", "`-", "step"] for line in fast[1].splitlines()), fast[1]
    profile = profiler.read(str(base.with_suffix(".hatchet")))
    assert "bytes" in profile.stored_metrics and not {"nan", "big", "peak"} & set(profile.stored_metrics)
