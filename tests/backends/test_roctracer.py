"""The roctracer backend end to end on the CPU, through a stand-in libroctracer64.so built from
tests/standins/roctracer_standin.c: real native core, real Python API and writers; the stand-in
plays roctracer and the HIP runtime (API callbacks, activity records, pool buffers)."""
import ctypes
import json
import os
import subprocess
import sys
import threading

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import BackendUnavailable, get_backend
from standins import build_standin, load_standin
from support.threads import run_threads
from vendor_outputs import find, kernels, load_meta, load_tree  # noqa: E402  (shared with mthreads/cann)

HIP_OP_ID_DISPATCH, HIP_OP_ID_COPY, HIP_OP_ID_BARRIER = 0, 1, 2
COPY_HTOD, COPY_DTOH, COPY_DTOD, FILL = 0, 1, 2, 3
HIP_DEVICE_TYPE = 0


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    path = build_standin("roctracer_standin.c", tmp_path_factory.mktemp("roctracer"), "libroctracer64.so")
    lib = load_standin(path)
    u64, c = ctypes.c_uint64, ctypes.c_char_p
    lib.standin_call.argtypes = [c, ctypes.c_uint32, ctypes.c_uint32, c, u64, ctypes.c_int, u64, u64, ctypes.c_int]
    lib.standin_call.restype = u64
    lib.standin_launch.argtypes = [c, u64, u64]
    lib.standin_launch.restype = u64
    lib.standin_record_unseen.argtypes = [c, u64, u64]
    lib.standin_record_unseen.restype = u64
    lib.standin_fail_next.argtypes = [c, ctypes.c_int]
    for name in ("standin_pending", "standin_delivered", "standin_buffers"):
        getattr(lib, name).restype = u64
    lib.path = path
    return lib


@pytest.fixture(autouse=True)
def roctracer_env(standin, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_ROCTRACER_PATH", standin.path)
    yield
    profiler.finalize()
    standin.standin_drop_next(0)
    standin.standin_refuse_op_callbacks(0)


def launch(lib, kernel, queue=0, ns=1000):
    return lib.standin_launch(kernel.encode(), queue, ns)


def copy(lib, api, kind, nbytes, queue=0, ns=1000):
    return lib.standin_call(api.encode(), HIP_OP_ID_COPY, kind, None, nbytes, 0, queue, ns, 1)


def test_shadow_scopes_states_exact_counts_and_times(standin, tmp_path):
    base = tmp_path / "p"
    profiler.start(name=str(base), backend="roctracer")
    with profiler.scope("model"):
        with profiler.scope("attn"):
            for _ in range(3):
                launch(standin, "_Z6matmulPfS_i", queue=3, ns=5000)
            with profiler.state("fwd"):
                launch(standin, "softmax_kernel", queue=3, ns=700)
        copy(standin, "hipMemcpyHtoDAsync", COPY_HTOD, 4096, queue=3, ns=300)
        copy(standin, "hipMemsetAsync", FILL, 1024, queue=3, ns=100)
    launch(standin, "softmax_kernel", queue=4, ns=900)
    profiler.finalize()

    root, devices = load_tree(base)
    assert root["frame"]["name"] == "ROOT"
    matmul = find(root, "model", "attn", "matmul(float*, float*, int)")
    assert matmul["metrics"]["count"] == 3 and matmul["metrics"]["time (ns)"] == 15000
    assert matmul["metrics"]["device_type"] == HIP_DEVICE_TYPE and matmul["metrics"]["device_id"] == 0
    assert matmul["metadata"]["mangled_name"] == "_Z6matmulPfS_i"
    softmax = find(root, "model", "attn", "fwd", "softmax_kernel")
    assert (softmax["metrics"]["count"], softmax["metrics"]["time (ns)"]) == (1, 700)
    htod = find(root, "model", "memcpy HtoD")
    assert htod["frame"]["kind"] == "memcpy"
    assert (htod["metrics"]["count"], htod["metrics"]["time (ns)"], htod["metrics"]["bytes"]) == (1, 300, 4096)
    memset = find(root, "model", "memset")
    assert memset["frame"]["kind"] == "memset" and memset["metrics"]["bytes"] == 1024
    top = find(root, "softmax_kernel")
    assert (top["metrics"]["count"], top["metrics"]["time (ns)"]) == (1, 900)
    assert sum(n["metrics"]["count"] for _, n in kernels(root)) == 7
    assert devices == {}  # roctracer describes no devices

    meta = load_meta(base)
    assert meta["backend"] == "roctracer" and meta["roctracer_library"] == standin.path
    assert meta["roctracer_version"] == "4.1"
    assert (meta["kernel_records"], meta["lost_launches"], meta["unattributed_records"]) == (7, 0, 0)
    assert meta["dropped_records"] == 0


def launch_from_here(lib):
    return launch(lib, "python_ctx_kernel", ns=1234)


def test_python_context_frames_name_this_file(standin, tmp_path):
    base = tmp_path / "py"
    profiler.start(name=str(base), backend="roctracer", context="python")
    for _ in range(2):  # one call site: one path
        launch_from_here(standin)
    profiler.finalize()
    root, _ = load_tree(base)
    (path, node), = kernels(root)
    assert path[-1] == "python_ctx_kernel"
    assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (2, 2468)
    this_file = os.path.basename(__file__)
    assert any(this_file in frame and frame.endswith("@launch_from_here") for frame in path[:-1]), path
    assert any(frame.endswith("@test_python_context_frames_name_this_file") for frame in path[:-1]), path


def test_trace_has_kernels_on_queue_tracks_and_scopes(standin, tmp_path):
    base = tmp_path / "t"
    profiler.start(name=str(base), backend="roctracer", data="trace")
    with profiler.scope("step"):
        launch(standin, "k_on_q1", queue=1, ns=2000)
        launch(standin, "k_on_q2", queue=2, ns=3000)
        launch(standin, "k_on_q1", queue=1, ns=2000)
    profiler.finalize()
    with open(str(base) + ".chrome_trace") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    kernel_events = [e for e in events if e.get("ph") == "X" and e["name"].startswith("k_on_q")]
    assert len(kernel_events) == 3
    tracks = {(e["pid"], e["tid"]) for e in kernel_events}
    assert len(tracks) == 2
    by_name = {}
    for e in kernel_events:
        by_name.setdefault(e["name"], set()).add((e["pid"], e["tid"]))
    assert by_name["k_on_q1"] != by_name["k_on_q2"] and len(by_name["k_on_q1"]) == 1
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    assert {names[t] for t in tracks} == {"stream 1", "stream 2"}
    assert sorted(e["dur"] for e in kernel_events) == [2.0, 2.0, 3.0]
    scope = [e for e in events if e.get("ph") == "X" and e["name"] == "step"]
    assert len(scope) == 1 and scope[0]["pid"] == os.getpid()
    # Vendor timestamps were mapped onto the host clock: each kernel starts just after the scope
    # opened (the stand-in's clock runs 1000 s ahead of the host's).
    s = scope[0]
    for e in kernel_events:
        assert s["ts"] <= e["ts"] <= s["ts"] + s["dur"] + 1000.0, (s, e)


def test_finalize_flushes_records_still_in_the_pool(standin, tmp_path):
    base = tmp_path / "f"
    delivered = standin.standin_delivered()
    profiler.start(name=str(base), backend="roctracer")
    for i in range(10):
        launch(standin, "pooled", ns=10)
    assert standin.standin_pending() == 10  # nothing delivered yet: all sit in the pool's buffer
    profiler.finalize()
    assert standin.standin_pending() == 0
    assert standin.standin_delivered() - delivered == 10
    node = find(load_tree(base)[0], "pooled")
    assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (10, 100)
    assert standin.standin_state() == 0  # pool closed, activity and callbacks off, stopped


def test_full_buffers_are_delivered_while_running(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_BUFFER_SIZE", "4096")  # 64 records a buffer
    base = tmp_path / "b"
    buffers = standin.standin_buffers()
    profiler.start(name=str(base), backend="roctracer")
    for i in range(200):
        launch(standin, "many", ns=1)
    assert standin.standin_pending() == 200 % 64
    profiler.finalize()
    assert standin.standin_buffers() - buffers == 4
    assert find(load_tree(base)[0], "many")["metrics"]["count"] == 200


def test_records_of_deactivated_launches_stay_out(standin, tmp_path):
    base = tmp_path / "off"
    sid = profiler.start(name=str(base), backend="roctracer")
    launch(standin, "counted", ns=10)
    profiler.deactivate(sid)
    for _ in range(3):
        launch(standin, "not_counted", ns=10)
    profiler.activate(sid)
    profiler.finalize()  # every record is delivered here, with the session active again
    root, _ = load_tree(base)
    assert find(root, "counted")["metrics"]["count"] == 1
    assert [c["frame"]["name"] for c in root["children"]] == ["counted"]
    assert load_meta(base)["unattributed_records"] == 0


def test_lost_and_unattributed_records_in_metadata(standin, tmp_path):
    base = tmp_path / "d"
    profiler.start(name=str(base), backend="roctracer")
    with profiler.scope("s"):
        standin.standin_drop_next(2)
        for _ in range(5):
            launch(standin, "sometimes_lost", ns=100)
        standin.standin_record_unseen(b"launched_unseen", 0, 50)
        # No flush while running: these records arrive only in finalize's flush, after the
        # session stopped taking launches, and must still reach it.
    with pytest.warns(UserWarning, match="2 kernel records were lost"):
        profiler.finalize()
    meta = load_meta(base)
    assert meta["lost_launches"] == 2
    assert meta["unattributed_records"] == 1
    assert meta["kernel_records"] == 4
    assert meta["dropped_records"] == 0 and "no dropped-record count" in meta["dropped_records_note"]
    root, _ = load_tree(base)
    assert find(root, "s", "sometimes_lost")["metrics"]["count"] == 3
    assert find(root, "launched_unseen")["metrics"]["count"] == 1  # kept, under ROOT


def test_graph_launch_records_share_one_launch(standin, tmp_path):
    base = tmp_path / "g"
    profiler.start(name=str(base), backend="roctracer")
    with profiler.scope("graph"):
        standin.standin_call(b"hipGraphLaunch", HIP_OP_ID_DISPATCH, 0, b"graph_node", 0, 0, 5, 100, 3)
        # A barrier has no device work of its own, and host functions get no callback.
        standin.standin_call(b"hipStreamSynchronize", HIP_OP_ID_BARRIER, 0, None, 0, 0, 5, 0, 1)
        standin.standin_call(b"hipLaunchHostFunc", HIP_OP_ID_DISPATCH, 0, b"x", 0, 0, 5, 0, 0)
    profiler.finalize()
    node = find(load_tree(base)[0], "graph", "graph_node")
    assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (3, 300)
    meta = load_meta(base)
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (3, 0, 0)
    assert meta["roctracer_records"]["skipped"] >= 1


def test_two_threads_with_their_own_scopes(standin, tmp_path):
    base = tmp_path / "th"
    profiler.start(name=str(base), backend="roctracer")
    barrier = threading.Barrier(2)

    def worker(index):
        barrier.wait()
        with profiler.scope(f"thread{index}"):
            for _ in range(50):
                launch(standin, f"kernel_of_{index}", queue=index, ns=10 + index)

    run_threads(worker, (1, 2))
    profiler.finalize()
    root, _ = load_tree(base)
    assert sorted(c["frame"]["name"] for c in root["children"]) == ["thread1", "thread2"]
    for i in (1, 2):
        scope = find(root, f"thread{i}")
        assert [c["frame"]["name"] for c in scope["children"]] == [f"kernel_of_{i}"]
        node = scope["children"][0]
        assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (50, 50 * (10 + i))


def test_domain_callback_when_per_call_callbacks_are_refused(standin, tmp_path):
    standin.standin_refuse_op_callbacks(1)
    base = tmp_path / "dc"
    profiler.start(name=str(base), backend="roctracer")
    assert standin.standin_op_callbacks() == 0 and standin.standin_state() & 4
    with profiler.scope("s"):
        launch(standin, "k", ns=10)
        standin.standin_call(b"hipMalloc", HIP_OP_ID_DISPATCH, 0, None, 0, 0, 0, 0, 0)  # not a launch
    profiler.finalize()
    meta = load_meta(base)
    assert meta["roctracer_records"]["domain_callback"] is True
    assert (meta["kernel_records"], meta["lost_launches"], meta["unattributed_records"]) == (1, 0, 0)
    assert find(load_tree(base)[0], "s", "k")["metrics"]["count"] == 1
    assert standin.standin_state() == 0


def test_busy_pool_is_a_clear_error_and_leaves_nothing_enabled(standin, tmp_path):
    standin.standin_fail_next(b"roctracer_open_pool", -5)
    with pytest.raises(RuntimeError, match="another roctracer client already holds the default activity pool") as info:
        profiler.start(name=str(tmp_path / "busy"), backend="roctracer")
    assert "roctracer_open_pool failed in " + standin.path in str(info.value)
    assert info.type is _native.SubscriberTaken  # typed: Python need not read the message
    assert standin.standin_state() == 0
    assert profiler.session.open_sessions() == []
    # The next start works.
    profiler.start(name=str(tmp_path / "after"), backend="roctracer")
    launch(standin, "after_error", ns=5)
    profiler.finalize()
    assert find(load_tree(tmp_path / "after")[0], "after_error")["metrics"]["count"] == 1


def test_flush_failure_names_the_call(standin, tmp_path):
    profiler.start(name=str(tmp_path / "ff"), backend="roctracer")
    standin.standin_fail_next(b"roctracer_flush_activity", -1)
    with pytest.raises(RuntimeError, match="roctracer_flush_activity failed in .*libroctracer64.so: stand-in"):
        profiler.finalize()
    profiler.finalize()
    assert standin.standin_state() == 0


def test_already_loaded_copy_is_found_without_configuration(standin, tmp_path, monkeypatch):
    monkeypatch.delenv("FLAGTREE_PROFILER_ROCTRACER_PATH")
    monkeypatch.delenv("ROCM_PATH", raising=False)
    assert ("already loaded", standin.path) in get_backend("roctracer").library_candidates()
    profiler.start(name=str(tmp_path / "al"), backend="roctracer")
    launch(standin, "found", ns=5)
    profiler.finalize()
    assert load_meta(tmp_path / "al")["roctracer_library"] == standin.path


def test_missing_library_names_every_place_tried(tmp_path):
    # A fresh process: this one holds the stand-in, which the search would find as loaded.
    missing = tmp_path / "nowhere" / "libroctracer64.so"
    env = dict(os.environ, FLAGTREE_PROFILER_ROCTRACER_PATH=str(missing), ROCM_PATH=str(tmp_path / "rocm"),
               LD_LIBRARY_PATH="")
    code = ("import flagtree.profiler as p\n"
            "from flagtree.profiler.backends import BackendUnavailable\n"
            "try:\n"
            f"    p.start(name={str(tmp_path / 'm')!r}, backend='roctracer')\n"
            "except BackendUnavailable as e:\n"
            "    print(e)\n"
            "else:\n"
            "    print('STARTED')\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    message = out.stdout
    assert "libroctracer64.so" in message and "FLAGTREE_PROFILER_ROCTRACER_PATH" in message
    assert str(missing) in message
    assert str(tmp_path / "rocm" / "lib" / "libroctracer64.so") in message
    assert "/opt/rocm/lib/libroctracer64.so" in message
    assert "loader path: cannot load libroctracer64.so" in message
    assert not os.path.exists(str(tmp_path / "m") + ".hatchet")
    assert issubclass(BackendUnavailable, RuntimeError)
