"""Extras joined to launches after the fact (hardware counters, PC samples, kernel-side scopes):
the native launch and record paths driven by hand, as the CUPTI backends drive them, with
extras arriving before and after each kernel's record."""
import json

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native, session as sessions
from support.profiles import find, load_json, load_tree


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def slot_of(session_id):
    return sessions.find_session(session_id).slot


def test_extras_join_kernel_nodes_whether_early_or_late(tmp_path):
    sid = profiler.start(str(tmp_path / "x"))
    slot = slot_of(sid)
    _native.session.session_enable_extras(slot)
    _native.session.session_set_mean_metrics(slot, ["occupancy"])
    with profiler.scope("mm"):
        _native.testing.launch(7001, False)
        _native.testing.launch(7002, False)
    # 7001: record first, then extras; 7002: extras first (held), then the record.
    _native.testing.record(7001, "gemm", 0, 10, 0)
    _native.session.session_attach(slot, 7001, [("dram_bytes", 100.0), ("occupancy", 40.0)],
                           [([("line", "k.py:3@gemm")], [("num_samples", 5.0)])])
    _native.session.session_attach(slot, 7002, [("dram_bytes", 50.0), ("occupancy", 60.0)],
                           [([("line", "k.py:3@gemm")], [("num_samples", 2.0)]),
                            ([("line", "k.py:9@gemm")], [("num_samples", 1.0)])])
    _native.testing.record(7002, "gemm", 10, 30, 0)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "x.hatchet")
    gemm = find(root, "mm", "gemm")
    assert gemm["metrics"]["count"] == 2 and gemm["metrics"]["time (ns)"] == 30
    assert gemm["metrics"]["dram_bytes"] == 150.0          # summed
    assert gemm["metrics"]["occupancy"] == pytest.approx(50.0)  # a ratio: averaged
    line3 = find(root, "mm", "gemm", "k.py:3@gemm")
    assert line3["metrics"]["num_samples"] == 7.0
    assert line3["frame"]["kind"] == "line"
    assert find(root, "mm", "gemm", "k.py:9@gemm")["metrics"]["num_samples"] == 1.0
    assert "unmatched_extras" not in load_json(tmp_path / "x.meta.json")


def test_extras_without_a_launch_are_kept_and_counted(tmp_path):
    sid = profiler.start(str(tmp_path / "u"))
    slot = slot_of(sid)
    _native.session.session_attach(slot, 7100, [("dram_bytes", 8.0)],
                           [([("device_scope", "load")], [("cycles", 30.0)])])
    profiler.finalize()
    root, _ = load_tree(tmp_path / "u.hatchet")
    holder = find(root, "<unmatched launch>")
    assert holder["metrics"]["dram_bytes"] == 8.0
    assert find(root, "<unmatched launch>", "load")["frame"]["kind"] == "device_scope"
    assert load_json(tmp_path / "u.meta.json")["unmatched_extras"] == 1


def test_trace_events_carry_attached_metrics(tmp_path):
    sid = profiler.start(str(tmp_path / "t"), data="trace")
    slot = slot_of(sid)
    _native.session.session_set_mean_metrics(slot, ["sm_pct"])
    _native.testing.launch(7201, False)
    _native.testing.launch(7202, False)
    _native.testing.record(7201, "copy", 0, 10, 0)
    _native.testing.record(7202, "copy", 10, 20, 0)
    _native.session.session_attach(slot, 7201, [("dram_bytes", 64.0), ("sm_pct", 10.0)])
    _native.session.session_attach(slot, 7201, [("sm_pct", 30.0)])  # a second pass of the same launch
    _native.session.session_attach(slot, 7999, [("dram_bytes", 1.0)])  # no such launch
    # the records above are stamped near 0, far before their launches on the host's clock
    with pytest.warns(UserWarning, match="clock is off the host's"):
        profiler.finalize()
    with open(tmp_path / "t.chrome_trace") as f:
        events = json.load(f)["traceEvents"]
    kernels = {e["args"]["correlation"]: e for e in events if e.get("cat") == "kernel"}
    assert kernels[7201]["args"]["dram_bytes"] == 64.0
    assert kernels[7201]["args"]["sm_pct"] == pytest.approx(20.0)
    assert "dram_bytes" not in kernels[7202]["args"]
    assert load_json(tmp_path / "t.meta.json")["unmatched_extras"] == 1


def test_bad_child_kind_is_a_clear_error(tmp_path):
    sid = profiler.start(str(tmp_path / "b"))
    with pytest.raises(ValueError, match="unknown node kind 'pc'"):
        _native.session.session_attach(slot_of(sid), 1, [], [([("pc", "x")], [])])


def test_launch_slices_keep_their_kernel_names_when_metric_names_come_later(tmp_path):
    """The trace writer escapes names into a table as it meets them: a kernel's name, taken
    before its launch's metrics brought new names in, must survive the table's growth (it was a
    dangling reference: "launch " slices with no name, a use-after-free under ASan)."""
    sid = profiler.start(str(tmp_path / "n"), data="trace")
    slot = slot_of(sid)
    kernels = {}
    for i in range(40):
        corr = 7300 + i
        kernels[corr] = f"a_kernel_name_longer_than_small_strings_{i}"
        _native.testing.launch(corr, False)
        _native.testing.record(corr, kernels[corr], 10 * i, 10 * i + 5, 0)
        _native.session.session_attach(slot, corr, [(f"metric_first_seen_here_{i}_{j}", float(j)) for j in range(8)])
    # the records above are stamped near 0, far before their launches on the host's clock
    with pytest.warns(UserWarning, match="clock is off the host's"):
        profiler.finalize()
    with open(tmp_path / "n.chrome_trace") as f:
        events = json.load(f)["traceEvents"]
    launches = sorted(e["name"] for e in events if e.get("cat") == "launch" and e.get("ph") == "X")
    assert launches == sorted(f"launch {name}" for name in kernels.values())
    by_corr = {e["args"]["correlation"]: e for e in events if e.get("cat") == "kernel"}
    assert all(by_corr[c]["name"] == name and by_corr[c]["args"]["metric_first_seen_here_%d_7" % (c - 7300)] == 7.0
               for c, name in kernels.items())
