"""The mthreads backend end to end on the CPU, through a stand-in libmupti.so (with the libmusa calls
it needs) built from tests/standins/mupti_standin.c: real native core (the shared CUPTI-dialect
tracer with MUPTI's table), real Python API and writers; the stand-in plays MUPTI and the MUSA
runtime (API callbacks, activity buffers, the reported MUSA 4.3 hazards). What mthreads shares
with cann (the shared tracer's launch and record paths) is tested over both in
test_dialect_backends.py."""
import json
import os
import subprocess
import sys

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from vendor_outputs import find, load_meta, load_tree, viewer_values

MUSA_DEVICE_TYPE = 4
HTOD = 1

STATE_SUBSCRIBED, STATE_PENDING, STATE_UNFORCED, STATE_FINALIZE, STATE_ATTRIBUTES, STATE_SYNCS = range(6)
STATE_BLOCKED_FLUSHES, STATE_CORRUPTED, STATE_SPOILT_READS = 8, 9, 10


@pytest.fixture
def standin(mupti_lib):
    return mupti_lib


@pytest.fixture(autouse=True)
def mupti_env(standin, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_MUPTI_PATH", standin.path)
    yield
    profiler.finalize()
    standin.standin_zero_next(0)
    standin.standin_drop_next(0)
    standin.standin_hold_subscriber(0)
    standin.standin_no_export_table(0)
    standin.standin_refuse_kind(0)
    standin.standin_null_context(0)
    standin.standin_corrupt_at_teardown(0)
    assert standin.standin_state(STATE_BLOCKED_FLUSHES) == 0  # no test made a second forced flush in a row


def launch(lib, kernel, grid=(1, 1, 1), block=(128, 1, 1), smem=0, stream=7, ns=1000):
    return lib.standin_launch(kernel.encode(), lib.dims(*grid), lib.dims(*block), smem, stream, ns)


def test_kernels_copies_geometry_and_devices(standin, tmp_path):
    base = tmp_path / "p"
    profiler.start(name=str(base), backend="mthreads")
    with profiler.scope("model"):
        with profiler.scope("attn"):
            for _ in range(3):
                launch(standin, "_Z6matmulPfS_i", grid=(64, 2, 1), block=(128, 1, 1), smem=1024, ns=5000)
            with profiler.state("fwd"):
                launch(standin, "softmax_kernel", ns=700)
        standin.standin_memcpy(HTOD, 4096, 7, 300)
        standin.standin_memset(1024, 7, 100)
    profiler.finalize()

    root, devices = load_tree(base)
    matmul = find(root, "model", "attn", "matmul(float*, float*, int)")
    assert (matmul["metrics"]["count"], matmul["metrics"]["time (ns)"]) == (3, 15000)
    assert matmul["metrics"]["device_type"] == MUSA_DEVICE_TYPE
    meta = matmul["metadata"]
    assert (meta["grid"], meta["block"]) == ([64, 2, 1], [128, 1, 1])
    assert (meta["registers"], meta["static_shared_memory"], meta["dynamic_shared_memory"]) == (64, 8192, 1024)
    assert meta["mangled_name"] == "_Z6matmulPfS_i"
    assert find(root, "model", "attn", "fwd", "softmax_kernel")["metrics"]["count"] == 1
    htod = find(root, "model", "memcpy HtoD")
    assert (htod["frame"]["kind"], htod["metrics"]["bytes"], htod["metrics"]["time (ns)"]) == ("memcpy", 4096, 300)
    assert find(root, "model", "memset")["metrics"]["bytes"] == 1024
    assert devices == {"MUSA": {"0": {"arch": "22", "num_sms": 48, "clock_rate": 0, "memory_clock_rate": 1_500_000,
                                      "bus_width": 512}}}
    assert standin.standin_state(STATE_ATTRIBUTES) == 1  # geometry was switched on
    info = load_meta(base)
    assert info["backend"] == "mthreads" and info["mupti_library"] == standin.path
    assert (info["kernel_records"], info["lost_launches"], info["unattributed_records"]) == (6, 0, 0)
    assert info["devices"] == [{"index": 0, "name": "MTT S4000 (stand-in)", "arch": "22"}]
    assert "zero_timestamp_records" in info["mupti_records"]  # a process total (test_dialect_backends.py counts)


def test_runtime_launch_is_recorded_once_under_the_outer_call(standin, tmp_path):
    base = tmp_path / "rt"
    profiler.start(name=str(base), backend="mthreads")
    with profiler.scope("rt"):
        for _ in range(4):
            standin.standin_runtime_launch(b"softmax_kernel", standin.dims(1, 1, 1), standin.dims(64, 1, 1), 1, 50)
    profiler.finalize()
    assert find(load_tree(base)[0], "rt", "softmax_kernel")["metrics"]["count"] == 4
    meta = load_meta(base)
    assert (meta["kernel_records"], meta["lost_launches"], meta["unattributed_records"]) == (4, 0, 0)


def test_vendor_metrics_occupancy_resources_launch_stats_and_bandwidth(standin, tmp_path):
    base = tmp_path / "vm"
    mode = "vendor_metrics=launch_stats,occupancy,resource_usage,peak_memory_bandwidth"
    profiler.start(name=str(base), backend="mthreads", mode=mode)
    with profiler.scope("mixed"):
        for _ in range(3):  # 4 blocks/SM x 4 warps of 2048/32 = 64 warps: 0.25
            launch(standin, "_Z6matmulPfS_i", grid=(64, 2, 1), block=(128, 1, 1), smem=1024)
        launch(standin, "_Z6matmulPfS_i", grid=(64, 2, 1), block=(128, 1, 1), smem=40000)  # 2 blocks: 0.125
    with profiler.scope("small"):
        launch(standin, "softmax_kernel", grid=(8, 1, 1), block=(96, 1, 1))  # 8 x 3 warps / 64
    profiler.finalize()
    root, _ = load_tree(base)
    m = find(root, "mixed", "matmul(float*, float*, int)")["metrics"]
    assert m["count"] == 4
    assert m["occupancy"] == pytest.approx((3 * 0.25 + 0.125) / 4)  # a mean over launches, not a sum
    assert m["active_blocks_per_sm"] == pytest.approx(3.5)
    assert (m["registers_per_thread"], m["static_shared_memory (B)"], m["local_memory_per_thread (B)"]) == (64, 8192, 16)
    assert m["dynamic_shared_memory (B)"] == pytest.approx((3 * 1024 + 40000) / 4)
    assert (m["grid_size"], m["block_size"]) == (128, 128)
    s = find(root, "small", "softmax_kernel")["metrics"]
    assert s["occupancy"] == pytest.approx(24 / 64) and (s["grid_size"], s["block_size"]) == (8, 96)
    meta = load_meta(base)
    assert meta["vendor_metrics"] == ["launch_stats", "occupancy", "resource_usage", "peak_memory_bandwidth"]
    assert meta["peak_memory_bandwidth (GB/s)"] == {"0": 2 * 1.5e9 * 512 / 8 / 1e9}
    assert meta["mode"] == "runtime_base=on:vendor_metrics=" + mode.split("=", 1)[1]
    assert meta.get("unmatched_extras", 0) == 0


def test_two_sessions_get_their_own_metric_groups(standin, tmp_path):
    occ = profiler.start(name=str(tmp_path / "occ"), backend="mthreads", mode="vendor_metrics=occupancy")
    stats = profiler.start(name=str(tmp_path / "stats"), backend="mthreads", mode="vendor_metrics=launch_stats")
    launch(standin, "softmax_kernel", grid=(8, 1, 1), block=(96, 1, 1))
    profiler.finalize(stats)
    launch(standin, "softmax_kernel", grid=(8, 1, 1), block=(96, 1, 1))  # the first session only
    profiler.finalize(occ)
    a = find(load_tree(tmp_path / "occ")[0], "softmax_kernel")["metrics"]
    b = find(load_tree(tmp_path / "stats")[0], "softmax_kernel")["metrics"]
    assert a["count"] == 2 and a["occupancy"] == pytest.approx(24 / 64) and "grid_size" not in a
    assert b["count"] == 1 and (b["grid_size"], b["block_size"]) == (8, 96) and "occupancy" not in b


def test_plain_session_has_no_vendor_metrics(standin, tmp_path):
    base = tmp_path / "plain"
    profiler.start(name=str(base), backend="mthreads")
    launch(standin, "softmax_kernel")
    profiler.finalize()
    metrics = find(load_tree(base)[0], "softmax_kernel")["metrics"]
    assert "occupancy" not in metrics and "grid_size" not in metrics


def test_viewer_util_and_hatchet_read_the_output(standin, tmp_path):
    hatchet = pytest.importorskip("hatchet")
    base = tmp_path / "u"
    profiler.start(name=str(base), backend="mthreads")
    with profiler.scope("copy"):
        standin.standin_memcpy(HTOD, 960_000, 7, 10_000)  # 96 GB/s of the device's 192
        launch(standin, "softmax_kernel")
    profiler.finalize()
    path = str(base) + ".hatchet"
    assert viewer_values(path, "util", "memcpy HtoD") == pytest.approx([0.5])
    with open(path) as f:
        data = json.load(f)
    graph = hatchet.GraphFrame.from_literal([data[0]])
    assert {"ROOT", "copy", "memcpy HtoD", "softmax_kernel"} <= set(graph.dataframe["name"])


def test_trace_has_kernels_on_stream_tracks(standin, tmp_path):
    base = tmp_path / "t"
    profiler.start(name=str(base), backend="mthreads", data="trace")
    with profiler.scope("step"):
        launch(standin, "softmax_kernel", stream=1, ns=2000)
        launch(standin, "softmax_kernel", stream=2, ns=3000)
    profiler.finalize()
    with open(str(base) + ".chrome_trace") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    kernel_events = [e for e in events if e.get("ph") == "X" and e["name"] == "softmax_kernel"]
    assert sorted(e["dur"] for e in kernel_events) == [2.0, 3.0]
    assert len({(e["pid"], e["tid"]) for e in kernel_events}) == 2
    scope = [e for e in events if e.get("ph") == "X" and e["name"] == "step"][0]
    for e in kernel_events:  # MUPTI's clock (1000 s ahead) was mapped onto the host's
        assert scope["ts"] <= e["ts"] <= scope["ts"] + scope["dur"] + 1000.0


def test_flushes_are_forced_and_mupti_is_never_finalized(standin, tmp_path):
    for k in range(2):  # the second session subscribes again after the first unsubscribed
        profiler.start(name=str(tmp_path / f"s{k}"), backend="mthreads")
        launch(standin, "softmax_kernel")
        assert standin.standin_state(STATE_PENDING) == 1  # still in MUPTI's buffer
        profiler.flush_part()
        assert standin.standin_state(STATE_PENDING) == 0
        profiler.finalize()
        assert standin.standin_state(STATE_SUBSCRIBED) == 0
    assert standin.standin_state(STATE_UNFORCED) == 0
    assert standin.standin_state(STATE_FINALIZE) == 0
    assert standin.standin_state(STATE_SYNCS) >= 2  # flush waited for the launch's context


def test_dropped_records_are_counted(standin, tmp_path):
    base = tmp_path / "d"
    profiler.start(name=str(base), backend="mthreads")
    standin.standin_drop_next(2)
    for _ in range(5):
        launch(standin, "softmax_kernel", ns=10)
    with pytest.warns(UserWarning, match="2 kernel records were lost"):
        profiler.finalize()
    meta = load_meta(base)
    assert (meta["dropped_records"], meta["lost_launches"], meta["kernel_records"]) == (2, 2, 3)


def test_graph_launch_records_share_one_launch(standin, tmp_path):
    base = tmp_path / "g"
    profiler.start(name=str(base), backend="mthreads")
    with profiler.scope("graph"):
        standin.standin_graph_launch(b"softmax_kernel", 3, 5, 100)
    profiler.finalize()
    node = find(load_tree(base)[0], "graph", "softmax_kernel")
    assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (3, 300)
    meta = load_meta(base)
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (3, 0, 0)


def test_refused_activity_kind_names_it_and_leaves_nothing_subscribed(standin, tmp_path):
    standin.standin_refuse_kind(2)  # MEMSET
    with pytest.raises(RuntimeError, match="cannot enable activity kind 2 in " + standin.path):
        profiler.start(name=str(tmp_path / "k"), backend="mthreads")
    assert standin.standin_state(STATE_SUBSCRIBED) == 0 and standin.standin_state(7) == 0
    standin.standin_refuse_kind(0)
    profiler.start(name=str(tmp_path / "k2"), backend="mthreads")
    profiler.finalize()


def test_missing_driver_export_table_is_explained(standin, tmp_path):
    standin.standin_no_export_table(1)
    with pytest.raises(RuntimeError, match="muGetExportTable"):
        profiler.start(name=str(tmp_path / "x"), backend="mthreads")
    assert profiler.session.open_sessions() == []


def test_mode_errors_list_the_valid_forms():
    backend = get_backend("mthreads")
    with pytest.raises(ValueError, match="unknown vendor metric 'aicore'.*valid: launch_stats, occupancy, "
                                         "resource_usage, peak_memory_bandwidth"):
        backend.check_mode("vendor_metrics=occupancy,aicore")
    with pytest.raises(ValueError, match="unknown word 'pcsampling'"):
        backend.check_mode("pcsampling")
    with pytest.raises(ValueError, match="runtime_base=off is not supported"):
        backend.check_mode("runtime_base=off")
    assert backend.check_mode("runtime_base:vendor_metrics=occupancy").canonical() == "runtime_base=on:vendor_metrics=occupancy"


def test_library_search_order(standin, tmp_path, monkeypatch):
    folder = tmp_path / "musa"
    folder.mkdir()  # a folder: the library inside it is meant
    monkeypatch.setenv("FLAGTREE_PROFILER_MUPTI_PATH", str(folder))
    monkeypatch.setenv("MUSA_HOME", str(tmp_path / "home"))
    got = get_backend("mthreads").library_candidates()
    assert got == [("FLAGTREE_PROFILER_MUPTI_PATH", str(folder / "libmupti.so")), ("already loaded", standin.path),
                   ("$MUSA_HOME/lib", str(tmp_path / "home" / "lib" / "libmupti.so")),
                   ("$MUSA_HOME/lib64", str(tmp_path / "home" / "lib64" / "libmupti.so")),
                   ("/usr/local/musa/lib", "/usr/local/musa/lib/libmupti.so"), ("loader path", "libmupti.so"),
                   ("loader path", "libmupti.so.1")]
    # With the variable unset the loaded copy is found.
    monkeypatch.delenv("FLAGTREE_PROFILER_MUPTI_PATH")
    profiler.start(name=str(tmp_path / "al"), backend="mthreads")
    launch(standin, "softmax_kernel")
    profiler.finalize()
    assert load_meta(tmp_path / "al")["mupti_library"] == standin.path


def test_missing_library_names_every_place_tried(tmp_path):
    env = dict(os.environ, FLAGTREE_PROFILER_MUPTI_PATH=str(tmp_path / "no" / "libmupti.so"),
               MUSA_HOME=str(tmp_path / "musa"), LD_LIBRARY_PATH="")
    code = ("import flagtree.profiler as p\n"
            "try:\n"
            f"    p.start(name={str(tmp_path / 'm')!r}, backend='mthreads')\n"
            "except RuntimeError as e:\n"
            "    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("BackendUnavailable") and "FLAGTREE_PROFILER_MUPTI_PATH" in out.stdout
    for place in (str(tmp_path / "no" / "libmupti.so"), str(tmp_path / "musa" / "lib64" / "libmupti.so"),
                  "/usr/local/musa/lib/libmupti.so", "loader path: cannot load libmupti.so"):
        assert place in out.stdout, out.stdout


STOP_PROGRAM = """
import ctypes, sys
import flagtree.profiler as profiler
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
dims = ctypes.c_int * 3
lib.standin_launch.argtypes = [ctypes.c_char_p, dims, dims, ctypes.c_uint, ctypes.c_uint32, ctypes.c_uint64]
lib.standin_state.restype = ctypes.c_uint64
lib.standin_define_function(b"softmax_kernel", 32, 0, 0, 8)
profiler.start(name=sys.argv[2], backend="mthreads")
with profiler.scope("step"):
    lib.standin_launch(b"softmax_kernel", dims(1, 1, 1), dims(64, 1, 1), 0, 7, 500)
profiler.finalize()
print("stopped", lib.standin_state(8), flush=True)
"""


def test_stopping_never_makes_a_second_forced_flush_in_a_row(standin, tmp_path):
    # MUSA 4.3's MUPTI can wait forever in a forced flush that follows another with no launch
    # between (the stand-in blocks there): finalizing (a flush, then the stop) must not make one.
    program = tmp_path / "stop.py"
    program.write_text(STOP_PROGRAM)
    env = dict(os.environ, FLAGTREE_PROFILER_MUPTI_PATH=standin.path, MUPTI_STANDIN_BLOCK_S="600")
    try:
        done = subprocess.run([sys.executable, str(program), standin.path, str(tmp_path / "s")], env=env,
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the stop made a second forced flush in a row, which blocks in MUSA 4.3's MUPTI")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped 0"
    assert find(load_tree(tmp_path / "s")[0], "step", "softmax_kernel")["metrics"]["count"] == 1


def test_buffers_handed_back_after_the_stops_flush_are_not_read(standin, tmp_path):
    # Teardown can corrupt a buffer MUPTI retains: the stand-in hands one back, spoilt (a kernel
    # record's kind over garbage), when a kind is disabled after the stop's flush. It must not be read.
    base = tmp_path / "t"
    before = _native_stats()
    profiler.start(name=str(base), backend="mthreads")
    launch(standin, "softmax_kernel")
    standin.standin_corrupt_at_teardown(1)
    profiler.finalize()
    assert standin.standin_state(STATE_CORRUPTED) == 1 and standin.standin_state(STATE_SPOILT_READS) == 0
    meta = load_meta(base)
    assert (meta["kernel_records"], meta["unattributed_records"]) == (1, 0)
    assert [c["frame"]["name"] for c in load_tree(base)[0]["children"]] == ["softmax_kernel"]
    assert _native_stats()["buffers_after_teardown"] - before.get("buffers_after_teardown", 0) == 1


def _native_stats():
    from flagtree.profiler import _native

    return dict(_native.mthreads.mupti_stats())


def test_unknown_kinds_and_cut_records_are_skipped_and_counted(standin, tmp_path):
    base = tmp_path / "k"
    before = _native_stats()
    profiler.start(name=str(base), backend="mthreads")
    launch(standin, "softmax_kernel", ns=100)
    standin.standin_unknown_record(77)
    launch(standin, "softmax_kernel", ns=100)
    launch(standin, "softmax_kernel", ns=100)
    standin.standin_truncate_next_delivery(8)  # the delivery's last kernel record is cut short
    with pytest.warns(UserWarning, match="1 kernel records were lost"):
        profiler.finalize()
    stats = _native_stats()
    assert stats["unknown_kind_records"] - before["unknown_kind_records"] == 1
    assert stats["truncated_records"] - before["truncated_records"] == 1
    assert find(load_tree(base)[0], "softmax_kernel")["metrics"]["count"] == 2
    meta = load_meta(base)
    assert meta["mupti_records"]["unknown_kind_records"] >= 1 and meta["mupti_records"]["truncated_records"] >= 1


def test_a_callback_without_context_falls_back_to_the_current_one(standin, tmp_path):
    standin.standin_null_context(1)
    profiler.start(name=str(tmp_path / "c"), backend="mthreads")
    launch(standin, "softmax_kernel")
    syncs = standin.standin_state(STATE_SYNCS)
    profiler.finalize()  # waits for the device through the thread's current context
    assert standin.standin_state(STATE_SYNCS) > syncs


def test_deactivated_session_turns_mupti_quiet_and_loses_nothing(standin, tmp_path):
    sid = profiler.start(name=str(tmp_path / "q"), backend="mthreads")
    launch(standin, "softmax_kernel")
    profiler.deactivate(sid)
    # Kinds off, the launch's record still in MUPTI's buffer; idle launches make none.
    assert _native.mthreads.mupti_stats()["quiet"] and standin.standin_state(7) == 0
    assert standin.standin_state(STATE_PENDING) == 1
    launch(standin, "add_kernel")
    assert standin.standin_state(STATE_PENDING) == 1
    profiler.activate(sid)
    assert standin.standin_state(7) == 1
    launch(standin, "_Z6matmulPfS_i")
    profiler.finalize()
    root, _ = load_tree(tmp_path / "q")
    assert {c["frame"]["name"] for c in root["children"]} == {"softmax_kernel", "matmul(float*, float*, int)"}
    assert load_meta(tmp_path / "q")["kernel_records"] == 2
