"""cann vendor metrics through the real data path: interpreter kernels recorded
by a real session, aclprof from a stand-in library built here, a stand-in msprof export, and CSV
fixtures in msprof's layout (renamed headers, rows without ids, rows no launch explains)."""
import json
import os
import shutil
import types

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import session as session_module
from flagtree.profiler.backends import BackendUnavailable, get_backend
from flagtree.profiler.backends.cann.metrics import CannVendorMetrics
from flagtree.profiler.backends.mode import vendor_mode
from flagtree.profiler.vendor_import import UNMATCHED_HOLDER, session_launches
from support.json_check import load_strict
from support.kernels import launch_add, launch_copy, tensors
from standins import build_standin

HERE = os.path.dirname(os.path.abspath(__file__))
STANDINS = os.path.join(os.path.dirname(HERE), "standins")
FIXTURES = os.path.join(HERE, "fixtures", "msprof")


@pytest.fixture
def toolkit(tmp_path, monkeypatch):
    home = tmp_path / "toolkit"
    (home / "bin").mkdir(parents=True)
    (home / "lib64").mkdir()
    build_standin("aclprof_standin.c", home / "lib64", "libmsprofiler.so")
    shutil.copy(os.path.join(STANDINS, "msprof_standin.py"), home / "bin" / "msprof")
    os.chmod(home / "bin" / "msprof", 0o755)
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(home))
    return home


def _mode(text):
    return vendor_mode(get_backend("cann").mode_grammar.parse(text, "cann"))


def _render_fixtures(out_dir, launches, offset_ns):
    """The fixtures with {L[i]...} filled from the session's real launches (realtime microseconds)."""
    def us(ns):
        return f"{(ns + offset_ns) / 1000:.3f}"

    views = [types.SimpleNamespace(corr=l.correlation, us=us(l.start_ns), us_plus_1ms=us(l.start_ns + 1_000_000),
                                   us_plus_12=us(l.start_ns + 12_000)) for l in launches]
    far = us(launches[-1].start_ns + 60_000_000_000)
    out_dir.mkdir()
    for name in os.listdir(FIXTURES):
        with open(os.path.join(FIXTURES, name)) as handle:
            (out_dir / name).write_text(handle.read().format(L=views, far_us=far))


def _children(node, kind=None):
    return {c["frame"]["name"]: c for c in node["children"] if kind is None or c["frame"]["kind"] == kind}


def _profile_with_vendor_metrics(tmp_path, monkeypatch):
    x, y, out = tensors()
    sid = profiler.start(str(tmp_path / "prof"), backend="interpreter")
    s = session_module.find_session(sid)
    metrics = CannVendorMetrics(_mode("vendor_metrics=aicore,bandwidth:device_id=0"), s)
    metrics.start()
    with profiler.scope("work"):
        for _ in range(4):
            launch_add(x, y, out)
        for _ in range(2):
            launch_copy(x, out)
    launches = session_launches(s.slot)
    assert [l.name for l in launches] == ["add_kernel"] * 4 + ["copy_kernel"] * 2
    s.vendor_task_ids = {(0, 0, 12): launches[2].correlation}  # what a backend that knows task ids gives
    _render_fixtures(tmp_path / "csv", launches, s.start_realtime_ns - s.start_monotonic_ns)
    monkeypatch.setenv("MSPROF_STANDIN_CSV_DIR", str(tmp_path / "csv"))
    counts = metrics.finish()
    profiler.finalize(sid)
    return counts, metrics


def test_rows_join_kernel_nodes_rule_by_rule(toolkit, tmp_path, monkeypatch):
    counts, metrics = _profile_with_vendor_metrics(tmp_path, monkeypatch)
    assert counts["vendor_rows"] == 10 and counts["vendor_rows_unmatched"] == 2
    assert counts["vendor_rows_by_rule"] == {"correlation_id": 2, "task_id": 3, "name_device_stream_time": 1,
                                             "name_time": 1, "time_only": 1}
    assert counts["vendor_rows_time_only"] == 1
    root = json.load(open(tmp_path / "prof.hatchet"))[0]
    work = _children(root)["work"]
    add, copy = _children(work)["add_kernel"]["metrics"], _children(work)["copy_kernel"]["metrics"]
    assert add["cann.aicore_time (us)"] == pytest.approx(1.5 + 2.5 + 3.5 + 4.5)
    assert add["cann.aic_total_cycles"] == pytest.approx(10000)
    assert add["cann.memory_bytes (B)"] == pytest.approx(4096)  # bandwidth file, joined by a learned task id
    assert add["cann.main_mem_read_bw (GB/s)"] == pytest.approx(250.0)  # a rate: averaged, not summed
    assert add["cann.task_time (us)"] == pytest.approx(12.25)  # task_time file (lowercase headers)
    assert copy["cann.aicore_time (us)"] == pytest.approx(5.5 + 6.5)
    held = _children(root)[UNMATCHED_HOLDER]
    mystery = _children(_children(held)["msprof.op_summary"])["mystery_op"]["metrics"]
    assert mystery["cann.aicore_time (us)"] == pytest.approx(7.5) and mystery["count"] == 1
    assert _children(_children(held)["msprof.task_time"])["add_kernel"]["metrics"]["count"] == 1
    calls = (tmp_path / "prof.aclprof" / "PROF_000001_standin" / "standin_calls.txt").read_text().splitlines()
    assert calls[:6] == ["aclprofInit", "aclprofCreateConfig devices=1 first=0 aicore_metrics=2 flags=0x7",
                         "aclprofStart", "aclprofStop", "aclprofDestroyConfig", "aclprofFinalize"]
    assert calls[6].startswith("msprof --export=on --type=text --summary-format=csv --output=")


def test_vendor_json_reads_back_strict_with_each_rows_rule(toolkit, tmp_path, monkeypatch):
    _profile_with_vendor_metrics(tmp_path, monkeypatch)

    document = load_strict(tmp_path / "prof.vendor.json")
    assert document["schema_version"] == 1 and document["backend"] == "cann" and document["importer"] == "msprof"
    assert document["requested_metrics"] == ["aicore", "bandwidth"]
    assert len(document["raw_inputs"]) == 3
    assert document["summary"]["by_source"] == {"msprof.op_summary": 7, "msprof.task_time": 2, "msprof.bandwidth": 1}
    assert document["summary"]["by_state"] == {"collected": 8, "unmatched": 2}
    rules = [(a["vendor_row"].get("op_name") or a["vendor_row"].get("kernel_name"), a["rule"], a["state"])
             for a in document["associations"] if a["source"] == "msprof.op_summary"]
    assert rules == [("add_kernel", "correlation_id", "collected"), ("add_kernel", "correlation_id", "collected"),
                     ("add_kernel", "task_id", "collected"), ("add_kernel", "name_device_stream_time", "collected"),
                     ("copy_kernel", "name_time", "collected"), ("aclnnInplaceCopy", "time_only", "collected"),
                     ("mystery_op", None, "unmatched")]
    first = document["associations"][0]
    assert set(first["runtime_event"]) >= {"scope_id", "op_name", "task_id", "correlation_id", "device_id",
                                           "stream_id", "start_time_ns", "end_time_ns"}
    assert first["runtime_event"]["scope_path"] == ["work", "add_kernel"]
    assert any("time alone" in reason for reason in document["degrade_reasons"])


def test_planted_symlink_at_vendor_json_is_replaced_not_followed(toolkit, tmp_path, monkeypatch):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    os.symlink(victim, tmp_path / "prof.vendor.json")
    _profile_with_vendor_metrics(tmp_path, monkeypatch)
    assert victim.read_text() == "keep me"
    assert not os.path.islink(tmp_path / "prof.vendor.json")
    assert json.loads((tmp_path / "prof.vendor.json").read_text())["backend"] == "cann"


def test_missing_aclprof_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(tmp_path))
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
    try:
        with pytest.raises(BackendUnavailable, match="libmsprofiler.so or libacl_prof.so"):
            CannVendorMetrics(_mode("vendor_metrics=aicore"), session_module.find_session(sid)).start()
    finally:
        profiler.finalize(sid)


def test_no_msprof_still_writes_vendor_json_saying_why(toolkit, tmp_path, monkeypatch):
    os.unlink(toolkit / "bin" / "msprof")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    sid = profiler.start(str(tmp_path / "prof"), backend="interpreter")
    metrics = CannVendorMetrics(_mode("vendor_metrics=aicore"), session_module.find_session(sid))
    metrics.start()
    counts = metrics.finish()
    profiler.finalize(sid)
    assert counts["vendor_rows"] == 0
    assert any("msprof not found" in r for r in counts["vendor_degrade_reasons"])


def test_viewer_shows_the_vendor_metrics(toolkit, tmp_path, monkeypatch, capsys):
    from flagtree.profiler.viewer.cli import main

    _profile_with_vendor_metrics(tmp_path, monkeypatch)
    capsys.readouterr()
    assert main(["-m", "cann.aicore_time (us)", "--no-color", str(tmp_path / "prof.hatchet")]) == 0
    lines = {line.split()[-1]: float(line.split()[0]) for line in capsys.readouterr().out.splitlines()[1:]
             if line.split() and line.split()[0][0].isdigit()}
    assert lines["add_kernel"] == pytest.approx(12.0) and lines["copy_kernel"] == pytest.approx(12.0)
    assert lines["mystery_op"] == pytest.approx(7.5)
