"""The shared import layer on its own: ixKN CSV parsing, the rules in order with their counts,
the launch log under threads, strict atomic writes."""
import json
import os

import pytest

from flagtree.profiler import _native
from flagtree.profiler.vendor_import import (IXKN_RULES, MSPROF_RULES, Launch, VendorRow, match_rows,
                                             number_and_unit, session_launches)
from flagtree.profiler.writers.atomic import write_json
from flagtree.profiler.vendor_import import ixkn_csv, msprof_csv
from support.threads import run_threads

MS = 1_000_000


def _launch(i, name, start_ms, device=0, stream=0):
    return Launch(i, 1000 + i, name, 10 + i, (("kernel", name),), device, stream, start_ms * MS, start_ms * MS + 10,
                  start_ms * MS)


def test_ixkn_csv_units_messages_quoting_and_order():
    text = ("app output\n"
            '"Kernel ID","Process ID","Process Name","Kernel Name","Context","Stream","Section","Metrics","Value"\n'
            '"2","9","python "a.py"","k","1","3","Occupancy","Achieved Occupancy","45.5%"\n'
            '"1","9","python "a.py"","k","1","3","Launch Statistics","Grid Size","1,024"\n'
            '"1","9","python","k","1","3","Launch Statistics","WRN","grid too small, see docs"\n'
            '"3","8","other","k","1","3","Memory Access","Memory Throughput","1.5 Gbyte/second"\n'
            '"3","8","other","k","1","3","Memory Access","L2 Hit Rate","n/a"\n'
            '"4","9",oops\n')
    parsed = ixkn_csv.parse(ixkn_csv.csv_part(text), pid=9)
    rows = {r.raw["kernel_id"]: r for r in parsed.rows}
    assert rows["1"].metrics == {"tianshu.launch_statistics.grid_size": 1024.0} and rows["1"].ordinal == 0
    assert rows["2"].metrics == {"tianshu.occupancy.achieved_occupancy (%)": 45.5} and rows["2"].ordinal == 1
    assert rows["2"].raw["process_name"] == 'python "a.py"'  # ixKN's unescaped quotes, repaired
    assert rows["3"].ordinal is None  # another process: cannot be this session's launch
    assert rows["3"].values == {"tianshu.memory_access.l2_hit_rate": "n/a"}
    assert parsed.messages == [{"level": "WRN", "kernel_id": "1", "kernel_name": "k", "section": "Launch Statistics",
                                "text": "grid too small, see docs"}]
    assert len(parsed.malformed) == 1 and parsed.metric_rows == 4
    result = match_rows(parsed.rows, [_launch(0, "k", 1), _launch(1, "k", 2)], IXKN_RULES)
    assert result.by_rule == {"name_order": 2} and result.unmatched == 1


def test_ixkn_csv_columns_are_found_by_name_extra_and_missing_ones_tolerated():
    # Another column order, spelling differences, an extra column, no Context, Stream or Process Name.
    text = ('"Kernel Name","kernel id","Section","Metrics","Metric Unit","Value","Device","Process ID"\n'
            '"k","1","Occupancy","Achieved Occupancy","%","45.5","0","9"\n'
            '"k","2","Launch Statistics","Grid Size","","64","0","9"\n')
    parsed = ixkn_csv.parse(text, pid=9)
    rows = {r.raw["kernel_id"]: r for r in parsed.rows}
    assert rows["1"].metrics == {"tianshu.occupancy.achieved_occupancy (%)": 45.5} and rows["1"].ordinal == 0
    assert rows["2"].metrics == {"tianshu.launch_statistics.grid_size": 64.0} and rows["2"].ordinal == 1
    assert parsed.missing_columns == ["Process Name", "Context", "Stream"] and not parsed.malformed
    result = match_rows(parsed.rows, [_launch(0, "k", 1), _launch(1, "k", 2)], IXKN_RULES)
    assert result.by_rule == {"name_order": 2}


def test_ixkn_csv_without_a_needed_column_says_which():
    text = '"Kernel ID","Kernel Name","Section","Value"\n"1","k","Occupancy","45"\n'
    with pytest.raises(ValueError, match="lacks the column\\(s\\) 'Metrics' needed"):
        ixkn_csv.parse(text)
    parsed = ixkn_csv.parse('"Kernel ID","Section","Metrics","Value"\n"1","Occupancy","Achieved Occupancy","45"\n')
    assert parsed.missing_columns[:2] == ["Process ID", "Process Name"] and "Kernel Name" in parsed.missing_columns

def test_number_and_unit():
    assert number_and_unit("1,024.5 Mbyte/second") == (1024.5, "Mbyte/second")
    assert number_and_unit("\t17") == (17.0, None)
    assert number_and_unit("inf") == (None, None) and number_and_unit("nan %") == (None, None)


def test_rules_in_order_and_time_only_counted_apart():
    launches = [_launch(0, "a", 100), _launch(1, "a", 101, stream=2), _launch(2, "b", 200), _launch(3, "c", 300)]
    rows = [VendorRow("s", "zzz", correlation_id=1000),                                  # id wins over name
            VendorRow("s", "a", task_id=7, device_id=0, stream_id=2),                    # backend's task id
            VendorRow("s", "b", device_id=0, stream_id=0, start_ns=200 * MS + 4 * MS),  # name+device+stream
            VendorRow("s", "x", start_ns=300 * MS + 15 * MS),                           # time only, 15 ms
            VendorRow("s", "b", start_ns=200 * MS),                                     # b is claimed: unmatched
            VendorRow("t", "b", device_id=0, stream_id=0, start_ns=200 * MS)]           # other source: may reuse
    result = match_rows(rows, launches, MSPROF_RULES, task_ids={(0, 2, 7): launches[1]})
    assert [(m.rule, m.launch.index if m.launch else None) for m in result.matches] == [
        ("correlation_id", 0), ("task_id", 1), ("name_device_stream_time", 2), ("time_only", 3), (None, None),
        ("name_device_stream_time", 2)]
    assert result.time_only == 1 and result.unmatched == 1


def test_name_window_is_5ms_and_time_window_20ms():
    launches = [_launch(0, "a", 100)]
    assert match_rows([VendorRow("s", "a", start_ns=106 * MS)], launches, MSPROF_RULES).by_rule == {"time_only": 1}
    assert match_rows([VendorRow("s", "a", start_ns=121 * MS)], launches, MSPROF_RULES).unmatched == 1


def test_msprof_headers_are_normalised(tmp_path):
    path = tmp_path / "op_summary_1.csv"
    path.write_text("\ufeffDEVICE ID,task id,Stream_ID,OP NAME,Task Start Time(ns),Task Duration (us),Block Dim\n"
                    "1,\t5,2,void k(int),\t1000,2,8\n")
    (row,) = msprof_csv.read_file(str(path), clock_offset_ns=100)
    assert (row.device_id, row.task_id, row.stream_id, row.name) == (1, 5, 2, "k")
    assert (row.start_ns, row.end_ns) == (900, 2900) and row.metrics == {"cann.block_dim": 8.0,
                                                                   "cann.task_duration (us)": 2.0}


def test_launch_log_exact_over_10000_launches_from_8_threads():
    slot = _native.session.session_create(0, 0)
    _native.session.session_set_active(slot, True)
    _native.session.launch_log_enable(slot, True)
    try:
        def work(t):
            for i in range(1250):
                corr = t * 1250 + i + 1
                _native.testing.launch(corr, False)
                _native.testing.record(corr, f"k{t}", corr * 10, corr * 10 + 5, 0)

        run_threads(work, range(8))
        launches = session_launches(slot)
        assert len(launches) == 10000 and len({l.correlation for l in launches}) == 10000
        rows = [VendorRow("s", l.name, correlation_id=l.correlation) for l in launches[::7]]
        result = match_rows(rows, launches, MSPROF_RULES)
        assert result.by_rule == {"correlation_id": len(rows)} and result.unmatched == 0
    finally:
        _native.session.launch_log_enable(slot, False)
        _native.session.session_remove(slot)


def test_log_is_off_by_default_and_per_session():
    slot = _native.session.session_create(0, 0)
    _native.session.session_set_active(slot, True)
    try:
        _native.testing.launch(5, False)
        _native.testing.record(5, "k", 1, 2, 0)
        assert _native.session.launch_log_entries(slot)["correlation"] == []
    finally:
        _native.session.session_remove(slot)


def test_strict_atomic_json(tmp_path):
    target = tmp_path / "out.json"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("x")
    os.symlink(elsewhere, target)
    write_json(str(target), {"a": float("nan"), "b": [float("inf"), 1.5]})
    assert json.loads(target.read_text()) == {"a": None, "b": [None, 1.5]}
    assert elsewhere.read_text() == "x" and not os.path.islink(target)
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []


def test_rows_match_the_kernel_name_not_a_launch_metadata_rename():
    slot = _native.session.session_create(0, 0)
    _native.session.session_set_active(slot, True)
    _native.session.launch_log_enable(slot, True)
    try:
        _native.context.set_launch_metadata("renamed_by_hook", [])
        _native.testing.launch(1, False)
        _native.testing.record(1, "k", 10, 20, 0)
        (launch,) = session_launches(slot)
        assert (launch.name, launch.kernel_name, launch.path) == ("renamed_by_hook", "k",
                                                                   (("kernel", "renamed_by_hook"),))
        result = match_rows([VendorRow("ixkn", "k", ordinal=0)], [launch], IXKN_RULES)
        assert result.by_rule == {"name_order": 1}
    finally:
        _native.session.launch_log_enable(slot, False)
        _native.session.session_remove(slot)
