"""The cann backend's in-process path end to end on the CPU, through a stand-in libmspti.so (with
the mstx and aclrt entry points used) built from tests/standins/mspti_standin.c: real native core
(the shared CUPTI-dialect tracer with MSPTI's table), real Python API and writers."""
import ctypes
import json
import os
import stat
import subprocess
import sys
import threading
import types

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends.vendor import cann
from flagtree.profiler.backends import get_backend
from standins import build_standin, load_standin
from support.threads import run_threads
from vendor_outputs import find, kernels, load_meta, load_tree, viewer_values

NPU_DEVICE_TYPE = 3
LAUNCH, AIV_LAUNCH = 10, 13
HTOD = 2
STATE_SUBSCRIBED, STATE_PENDING, STATE_SYNCS, STATE_DELIVERED, STATE_RANGES_OPEN = range(5)


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    path = build_standin("mspti_standin.c", tmp_path_factory.mktemp("mspti"), "libmspti.so")
    lib = load_standin(path)
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    lib.standin_launch.argtypes = [ctypes.c_char_p, u32, u32, u64]
    lib.standin_launch.restype = u64
    lib.standin_memcpy.argtypes = [u32, u64, u32, u64]
    lib.standin_memcpy.restype = u64
    lib.standin_memset.argtypes = [u64, u32, u64]
    lib.standin_state.restype = u64
    lib.mstxRangeStartA.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    lib.mstxRangeStartA.restype = u64
    lib.mstxRangeEnd.argtypes = [u64]
    lib.path = path
    return lib


@pytest.fixture(autouse=True)
def mspti_env(standin, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_MSPTI_PATH", standin.path)
    monkeypatch.delenv("PROFILING_MODE", raising=False)
    yield
    profiler.finalize()
    standin.standin_unknown_time_next(0)
    standin.standin_drop_next(0)
    standin.standin_hold_subscriber(0)


def launch(lib, kernel, stream=3, ns=1000, cbid=LAUNCH):
    return lib.standin_launch(kernel.encode(), cbid, stream, ns)


def test_kernels_and_copies_join_by_64_bit_correlation_ids(standin, tmp_path):
    base = tmp_path / "p"
    profiler.start(name=str(base), backend="cann")
    with profiler.scope("model"):
        with profiler.scope("attn"):
            for _ in range(3):
                corr = launch(standin, "add_kernel", ns=5000)
            with profiler.state("fwd"):
                launch(standin, "softmax_kernel", ns=700, cbid=AIV_LAUNCH)
        standin.standin_memcpy(HTOD, 4096, 3, 300)
        standin.standin_memset(1024, 3, 100)  # MSPTI leaves its correlation id empty: ROOT
    profiler.finalize()
    assert corr > 2 ** 32

    root, devices = load_tree(base)
    add = find(root, "model", "attn", "add_kernel")
    assert (add["metrics"]["count"], add["metrics"]["time (ns)"], add["metrics"]["device_type"]) == (3, 15000, 3)
    assert find(root, "model", "attn", "fwd", "softmax_kernel")["metrics"]["time (ns)"] == 700
    htod = find(root, "model", "memcpy HtoD")
    assert (htod["metrics"]["bytes"], htod["metrics"]["time (ns)"]) == (4096, 300)
    memset = find(root, "memset")
    assert (memset["metrics"]["bytes"], memset["metrics"]["device_id"]) == (1024, 0)  # 0xFFFFFFFF: unknown
    assert devices == {"NPU": {"0": {"arch": "Ascend910B (stand-in)"}}}
    meta = load_meta(base)
    assert meta["backend"] == "cann" and meta["mspti_library"] == standin.path
    assert (meta["kernel_records"], meta["lost_launches"], meta["unattributed_records"]) == (6, 0, 1)
    assert meta["mspti_records"]["traced_callbacks"] == 6
    assert meta["devices"] == [{"index": 0, "arch": "Ascend910B (stand-in)"}]


def test_exact_counts_over_10000_launches_on_8_threads(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_BUFFER_SIZE", "16384")  # 292 records a buffer
    base = tmp_path / "many"
    delivered = standin.standin_state(STATE_DELIVERED)
    profiler.start(name=str(base), backend="cann")
    barrier = threading.Barrier(8)

    def worker(index):
        barrier.wait()
        with profiler.scope(f"thread{index}"):
            for _ in range(1250):
                launch(standin, "add_kernel", stream=index, ns=10 + index)

    run_threads(worker, range(8))
    profiler.finalize()
    assert standin.standin_state(STATE_DELIVERED) - delivered > 20
    root, _ = load_tree(base)
    for i in range(8):
        node = find(root, f"thread{i}", "add_kernel")
        assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (1250, 1250 * (10 + i))
    meta = load_meta(base)
    assert (meta["kernel_records"], meta["lost_launches"], meta["dropped_records"]) == (10000, 0, 0)


def launch_from_here(lib):
    return launch(lib, "py_kernel", ns=1234)


def test_python_context_names_this_file(standin, tmp_path):
    base = tmp_path / "py"
    profiler.start(name=str(base), backend="cann", context="python")
    for _ in range(2):
        launch_from_here(standin)
    profiler.finalize()
    (path, node), = kernels(load_tree(base)[0])
    assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (2, 2468)
    assert any(os.path.basename(__file__) in f and f.endswith("@launch_from_here") for f in path[:-1]), path


def test_flush_waits_for_the_device_and_delivers_the_buffer(standin, tmp_path):
    profiler.start(name=str(tmp_path / "f"), backend="cann")
    launch(standin, "add_kernel")
    assert standin.standin_state(STATE_PENDING) == 1
    syncs = standin.standin_state(STATE_SYNCS)
    profiler.flush_part()
    assert standin.standin_state(STATE_PENDING) == 0 and standin.standin_state(STATE_SYNCS) > syncs
    profiler.finalize()
    assert standin.standin_state(STATE_SUBSCRIBED) == 0


def test_unknown_timestamps_and_dropped_records_are_counted(standin, tmp_path):
    base = tmp_path / "z"
    profiler.start(name=str(base), backend="cann")
    standin.standin_unknown_time_next(3)
    for _ in range(6):
        launch(standin, "add_kernel", ns=10)
    standin.standin_drop_next(2)
    for _ in range(4):
        launch(standin, "add_kernel", ns=10)
    with pytest.warns(UserWarning, match="5 kernel records were lost"):
        profiler.finalize()
    meta = load_meta(base)
    assert meta["mspti_records"]["unknown_timestamp_records"] >= 3
    assert (meta["kernel_records"], meta["lost_launches"], meta["dropped_records"]) == (5, 5, 2)
    assert find(load_tree(base)[0], "add_kernel")["metrics"]["count"] == 5


def test_mstx_ranges_mirror_scopes_in_our_domain(standin, tmp_path):
    base = tmp_path / "mstx"
    stats = _native.mspti_stats()
    profiler.start(name=str(base), backend="cann", mode="mstx_enabled=true")
    with profiler.scope("outer"):
        with profiler.scope("inner"):
            launch(standin, "add_kernel")
        user = standin.mstxRangeStartA(b"users_own", None)  # another domain: counted apart
        standin.standin_state(STATE_RANGES_OPEN)
        standin.mstxRangeEnd(user)
        assert standin.standin_state(STATE_RANGES_OPEN) == 1  # "outer" is still open
    assert standin.standin_state(STATE_RANGES_OPEN) == 0
    profiler.finalize()
    meta = load_meta(base)
    assert meta["mstx"]["ranges_started"] - meta["mstx"]["ranges_ended"] == 0
    after = _native.mspti_stats()
    assert after["scope_marker_records"] - stats["scope_marker_records"] == 4  # 2 ranges: start + end each
    assert after["marker_records"] - stats["marker_records"] == 6
    assert find(load_tree(base)[0], "outer", "inner", "add_kernel")["metrics"]["count"] == 1
    # Mirroring ends with the session: scopes of a plain session open no ranges.
    started = _native.mstx_stats()["ranges_started"]
    profiler.start(name=str(tmp_path / "plain"), backend="cann")
    with profiler.scope("not_mirrored"):
        launch(standin, "add_kernel")
    profiler.finalize()
    assert _native.mstx_stats()["ranges_started"] == started


def test_scope_open_before_mirroring_is_left_alone(standin, tmp_path):
    with profiler.scope("before"):
        profiler.start(name=str(tmp_path / "b"), backend="cann", mode="mstx_enabled=on")
        with profiler.scope("during"):
            launch(standin, "add_kernel")
    profiler.finalize()
    assert standin.standin_state(STATE_RANGES_OPEN) == 0
    stats = _native.mstx_stats()
    assert stats["ranges_started"] == stats["ranges_ended"]


class FakeVendorMetrics:
    """Stands in for backends/vendor/cann_metrics.CannVendorMetrics (built by another helper)."""
    made = []

    def __init__(self, vendor_mode, session):
        self.mode, self.session, self.calls = vendor_mode, session, []
        FakeVendorMetrics.made.append(self)

    def start(self):
        self.calls.append(("start", _native.mspti_running()))

    def finish(self):
        self.calls.append(("finish", _native.session_stats(self.session.slot)["records"]))
        return {"rows": 7, "matched_by_correlation": 5, "unmatched": 2}


def test_vendor_metrics_call_sites(standin, tmp_path, monkeypatch):
    monkeypatch.setattr(cann, "_vendor_metrics_class", lambda: FakeVendorMetrics)
    base = tmp_path / "vm"
    profiler.start(name=str(base), backend="cann", mode="runtime_base:device_id=1:vendor_metrics=aicore,bandwidth")
    for _ in range(3):
        launch(standin, "add_kernel")
    profiler.finalize()
    collector = FakeVendorMetrics.made[-1]
    assert collector.mode.vendor_metrics == ("aicore", "bandwidth") and collector.mode.options == {"device_id": 1}
    assert collector.calls == [("start", True), ("finish", 3)]  # after the tracer started; after the flush
    assert load_meta(base)["vendor_metrics"] == {"rows": 7, "matched_by_correlation": 5, "unmatched": 2}


def test_vendor_metrics_without_their_module_is_a_clear_error(standin, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "flagtree.profiler.backends.vendor.cann_metrics", None)
    with pytest.raises(RuntimeError, match="vendor_metrics needs backends/vendor/cann_metrics.py"):
        profiler.start(name=str(tmp_path / "x"), backend="cann", mode="vendor_metrics=aicore")
    assert profiler.session.open_sessions() == [] and standin.standin_state(STATE_SUBSCRIBED) == 0


def test_mode_grammar_errors():
    backend = get_backend("cann")
    with pytest.raises(ValueError, match="unknown vendor metric 'occupancy'.*valid: aicore, bandwidth"):
        backend.check_mode("vendor_metrics=occupancy")
    with pytest.raises(ValueError, match="unknown option 'devices'.*device_id=<value>:mstx_enabled=<value>"):
        backend.check_mode("devices=0")
    with pytest.raises(ValueError, match="bad mstx_enabled .* must be on or off"):
        backend.check_mode("mstx_enabled=maybe")
    with pytest.raises(ValueError, match="bad device_id"):
        backend.check_mode("device_id=-1")
    assert backend.check_mode("mstx_enabled=true:device_id=0").canonical() == "runtime_base=on:device_id=0:mstx_enabled=true"


def test_another_subscriber_is_a_clear_error_and_the_program_goes_on(standin, tmp_path):
    standin.standin_hold_subscriber(1)
    with pytest.raises(RuntimeError, match="msprof, torch_npu's profiler") as info:
        profiler.start(name=str(tmp_path / "busy"), backend="cann")
    assert "MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" in str(info.value)
    assert profiler.session.open_sessions() == []
    standin.standin_hold_subscriber(0)
    profiler.start(name=str(tmp_path / "after"), backend="cann")
    launch(standin, "add_kernel")
    profiler.finalize()
    assert find(load_tree(tmp_path / "after")[0], "add_kernel")["metrics"]["count"] == 1


def test_profiling_mode_environment_is_detected(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("PROFILING_MODE", "true")
    with pytest.raises(RuntimeError, match="PROFILING_MODE=true"):
        profiler.start(name=str(tmp_path / "env"), backend="cann")
    assert standin.standin_state(STATE_SUBSCRIBED) == 0


def test_torch_npu_profiler_is_detected(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_NVTX", "0")  # the nvtx hook would look for torch.cuda
    fake_torch = types.SimpleNamespace(autograd=types.SimpleNamespace(
        profiler=types.SimpleNamespace(_is_profiler_enabled=True)))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "torch_npu", types.SimpleNamespace())
    with pytest.raises(RuntimeError, match="torch_npu's profiler"):
        profiler.start(name=str(tmp_path / "tp"), backend="cann")
    fake_torch.autograd.profiler._is_profiler_enabled = False
    profiler.start(name=str(tmp_path / "ok"), backend="cann")
    profiler.finalize()


def test_running_under_msprof_is_detected_and_the_program_goes_on(standin, tmp_path):
    script = tmp_path / "msprof"  # a launcher named like Ascend's, running the program as its child
    script.write_text(f"#!/bin/sh\n{sys.executable} \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    program = tmp_path / "app.py"
    program.write_text("import flagtree.profiler as p\n"
                       "try:\n"
                       f"    p.start(name={str(tmp_path / 'm')!r}, backend='cann')\n"
                       "except RuntimeError as e:\n"
                       "    print('ERROR', e)\n"
                       "print('went on')\n")
    env = dict(os.environ, FLAGTREE_PROFILER_MSPTI_PATH=standin.path)
    out = subprocess.run([str(script), str(program)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ERROR" in out.stdout and "runs under msprof" in out.stdout and out.stdout.endswith("went on\n")


def test_outputs_read_by_viewer_and_hatchet(standin, tmp_path):
    hatchet = pytest.importorskip("hatchet")
    base = tmp_path / "v"
    profiler.start(name=str(base), backend="cann")
    with profiler.scope("step"):
        launch(standin, "add_kernel", ns=2000)
    profiler.finalize()
    path = str(base) + ".hatchet"
    assert viewer_values(path, "time/ns", "add_kernel") == [2000]
    with open(path) as f:
        data = json.load(f)
    assert {"ROOT", "step", "add_kernel"} <= set(hatchet.GraphFrame.from_literal([data[0]]).dataframe["name"])


def test_library_search_order(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(tmp_path / "toolkit"))
    monkeypatch.setenv("FLAGTREE_PROFILER_MSPTI_PATH", str(tmp_path / "x" / "libmspti.so"))
    assert get_backend("cann").candidates() == [
        ("FLAGTREE_PROFILER_MSPTI_PATH", str(tmp_path / "x" / "libmspti.so")), ("already loaded", standin.path),
        ("${ASCEND_TOOLKIT_HOME}/lib64", str(tmp_path / "toolkit" / "lib64" / "libmspti.so")),
        ("/usr/local/Ascend/ascend-toolkit/latest/lib64", "/usr/local/Ascend/ascend-toolkit/latest/lib64/libmspti.so"),
        ("loader path", "libmspti.so")]
