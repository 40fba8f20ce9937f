"""The cann backend's in-process path on the CPU, through a stand-in libmspti.so (with the aclrt
entry points used; mstx in a stand-in libms_tools_ext.so) built from tests/standins/mspti_standin.c,
which behaves as Ascend's open-source MSPTI implementation does: callbacks without a correlation id
and only under LD_PRELOAD, CLOCK_REALTIME record times, device records reported every 20 ms and an
unsubscribe that stops profiling, external correlation records from one process-wide stack. Real
native core (the shared CUPTI-dialect tracer with MSPTI's table), real Python API and writers. What
cann shares with mthreads is tested over both in test_dialect_backends.py; triton-ascend's task
queue and copies in test_cann_launch_paths.py."""
import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import types
import warnings

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from support.package_path import PACKAGE_ROOT
from standins import build_standin
from support.threads import run_threads
from triton_launch import triton_launch
from vendor_outputs import find, load_meta, load_tree

LAUNCH, AIV_LAUNCH = 10, 13
ACL_API = 10
HTOD = 2
(STATE_SUBSCRIBED, STATE_PENDING, STATE_SYNCS, STATE_DELIVERED, STATE_RANGES_OPEN, STATE_KERNEL_KIND,
 STATE_MARKER_KIND, STATE_ON_DEVICE, STATE_LOST, STATE_EXTERNAL_IDS, STATE_UNPROFILED) = range(11)
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def standin(mspti_lib):
    return mspti_lib


@pytest.fixture(autouse=True)
def mspti_env(standin, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_MSPTI_PATH", standin.path)
    monkeypatch.delenv("PROFILING_MODE", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setenv("TRITON_ENABLE_TASKQUEUE", "0")  # triton_launch: the launch runs inside the hooks
    yield
    profiler.finalize()
    standin.standin_unknown_time_next(0)
    standin.standin_drop_next(0)
    standin.standin_hold_subscriber(0)
    standin.standin_external_records(1)
    assert standin.standin_state(STATE_EXTERNAL_IDS) == 0  # every pushed id was popped


def join_counts():
    stats = getattr(_native.cann, "mspti_join_stats", None)  # a build without the join counts nothing
    return dict(stats()) if stats else {}


def joined_since(before):
    after = join_counts()
    return {k: after[k] - before.get(k, 0) for k in after if not isinstance(after[k], dict)}


def start(base, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the once-only LD_PRELOAD notice (tested on its own)
        return profiler.start(name=str(base), backend="cann", **kwargs)


def test_triton_launches_join_their_kernels_through_external_correlation(standin, tmp_path):
    base = tmp_path / "p"
    before = join_counts()
    start(base)
    with profiler.scope("model"):
        for _ in range(3):
            corr = triton_launch(standin, "add_kernel", ns=5000)
        with profiler.state("fwd"):
            triton_launch(standin, "softmax_kernel", ns=700)
        standin.standin_memset(1024, 3, 100)  # no MEMSET records without LD_PRELOAD
    profiler.finalize()
    assert corr > 2 ** 32
    root, devices = load_tree(base)
    add = find(root, "model", "add_kernel")
    assert (add["metrics"]["count"], add["metrics"]["time (ns)"], add["metrics"]["device_type"]) == (3, 15000, 3)
    assert find(root, "model", "fwd", "softmax_kernel")["metrics"]["time (ns)"] == 700
    assert devices == {"NPU": {"0": {"arch": "Ascend910B (stand-in)"}}}
    assert [c["frame"]["name"] for c in root["children"]] == ["model"]
    meta = load_meta(base)
    assert (meta["kernel_records"], meta["lost_launches"], meta["unattributed_records"]) == (4, 0, 0)
    join = joined_since(before)
    assert (join["joined_by_external_id"], join["joined_by_launch_order"], join["unmatched_records"]) == (4, 0, 0)
    assert set(meta["mspti_join"]) == set(join) | {"records_by_kind"}
    assert meta["mspti_records"]["drop_count"] == "not reported by MSPTI"
    assert meta["launch_source"] == "Triton's launch hook"


def test_records_without_a_mapping_join_by_launch_order_or_stay_unattributed(standin, tmp_path):
    standin.standin_external_records(0)  # no EXTERNAL_CORRELATION records reach us
    base = tmp_path / "order"
    before = join_counts()
    start(base)
    with profiler.scope("step"):
        for ns in (100, 200, 300):
            triton_launch(standin, "add_kernel", ns=ns)
    profiler.finalize()
    add = find(load_tree(base)[0], "step", "add_kernel")
    assert (add["metrics"]["count"], add["metrics"]["time (ns)"]) == (3, 600)
    assert joined_since(before)["joined_by_launch_order"] == 3
    # A kernel no launch hook saw makes the order ambiguous: nothing is guessed.
    base = tmp_path / "ambiguous"
    before = join_counts()
    start(base)
    with profiler.scope("step"):
        triton_launch(standin, "add_kernel", ns=100)
        standin.standin_rt_launch(b"stray_kernel", 3, 50)
    with pytest.warns(UserWarning, match="1 kernel records were lost"):  # the hooked launch's
        profiler.finalize()
    root = load_tree(base)[0]
    assert sorted(c["frame"]["name"] for c in root["children"]) == ["add_kernel", "step", "stray_kernel"]
    assert find(root, "step")["children"] == []
    assert joined_since(before)["unmatched_records"] == 2 and load_meta(base)["unattributed_records"] == 2


def test_launches_of_several_threads_keep_their_own_ids(standin, tmp_path):
    # MSPTI's external id stack is one for the process: interleaved launches would swap ids.
    base = tmp_path / "threads"
    before = join_counts()
    start(base)
    barrier = threading.Barrier(4)

    def worker(index):
        barrier.wait()
        with profiler.scope(f"thread{index}"):
            for _ in range(200):
                triton_launch(standin, f"kernel{index}", stream=index, ns=10 + index)

    run_threads(worker, range(4))
    profiler.finalize()
    root = load_tree(base)[0]
    for i in range(4):
        node = find(root, f"thread{i}", f"kernel{i}")
        assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (200, 200 * (10 + i))
    join = joined_since(before)
    assert join["joined_by_external_id"] == 800 and join["unserialized_launches"] == 0


def test_record_times_are_moved_from_the_realtime_clock(standin, tmp_path):
    base = tmp_path / "clock"
    start(base, data="trace")
    with profiler.scope("host_scope"):
        triton_launch(standin, "add_kernel", ns=2000)
    profiler.finalize()
    events = json.load(open(str(base) + ".chrome_trace"))["traceEvents"]
    scope = next(e for e in events if e.get("name") == "host_scope" and e.get("ph") == "X")
    kernel = next(e for e in events if e.get("name") == "add_kernel" and e.get("ph") == "X")
    # The stand-in stamps the kernel 1 us after the launch, on CLOCK_REALTIME: once converted it
    # lies inside the host scope that made it.
    assert scope["ts"] <= kernel["ts"] <= scope["ts"] + scope["dur"], (scope, kernel)
    assert kernel["dur"] == pytest.approx(2.0)


def test_a_flush_stays_subscribed_and_waits_for_the_reports(standin, tmp_path):
    # MSPTI reports device records every 20 ms whether subscribed or not, and unsubscribing stops
    # profiling: a flush while the session goes on waits for the device and a report period, and
    # keeps the subscription (a launch in a gap would get no record).
    standin.standin_launch_at_unsubscribe(b"gap_kernel")  # another thread launches in any gap
    base = tmp_path / "stop"
    start(base)
    triton_launch(standin, "add_kernel")
    syncs, unprofiled = standin.standin_state(STATE_SYNCS), standin.standin_state(STATE_UNPROFILED)
    try:
        (part,) = profiler.flush_part(wait=True)
        assert standin.standin_state(STATE_UNPROFILED) == unprofiled  # no gap: nothing launched unrecorded
    finally:
        standin.standin_launch_at_unsubscribe(None)
    assert standin.standin_state(STATE_SYNCS) > syncs and standin.standin_state(STATE_ON_DEVICE) == 0
    assert standin.standin_state(STATE_SUBSCRIBED) == 1 and standin.standin_state(STATE_KERNEL_KIND) == 1
    assert find(json.load(open(part))[0], "add_kernel")["metrics"]["count"] == 1
    triton_launch(standin, "softmax_kernel")
    profiler.finalize()
    assert standin.standin_state(STATE_SUBSCRIBED) == 0 and standin.standin_state(STATE_ON_DEVICE) == 0
    assert load_meta(base)["kernel_records"] == 2


def test_unknown_kinds_unknown_times_and_lost_records_are_counted(standin, tmp_path):
    base = tmp_path / "z"
    before = _native.cann.mspti_stats()
    start(base)
    standin.standin_api_record(ACL_API)  # a newer kind (ACL_API), known to MSPTI, not to us
    lost = standin.standin_state(STATE_LOST)
    standin.standin_drop_next(2)  # no buffer for the next 2 device records: lost, uncounted by MSPTI
    for _ in range(2):
        triton_launch(standin, "add_kernel", ns=10)
    standin.standin_unknown_time_next(3)
    for _ in range(8):
        triton_launch(standin, "add_kernel", ns=10)
    with pytest.warns(UserWarning, match="5 kernel records were lost"):
        profiler.finalize()
    assert standin.standin_state(STATE_LOST) - lost == 2
    meta = load_meta(base)
    after = _native.cann.mspti_stats()
    assert after["unknown_kind_records"] - before["unknown_kind_records"] == 1
    assert after["unknown_timestamp_records"] - before["unknown_timestamp_records"] == 3
    assert (meta["kernel_records"], meta["lost_launches"], meta["dropped_records"]) == (5, 5, 0)
    assert meta["mspti_records"]["drop_count"] == "not reported by MSPTI"


def test_symbols_mspti_does_not_have_are_not_looked_up(tmp_path):
    # A library exporting msptiGetTimestamp (on a clock of its own) and a dropped-record count of
    # 1000: neither exists in any MSPTI, so neither may be used.
    trap = tmp_path / "trap"
    trap.mkdir()
    trap.joinpath("trap.c").write_text(textwrap.dedent("""
        #include <stdint.h>
        #include <stddef.h>
        __attribute__((visibility("default"))) int msptiGetTimestamp(uint64_t* t) { *t = 12345; return 0; }
        __attribute__((visibility("default"))) int msptiActivityGetNumDroppedRecords(void* c, uint32_t s, size_t* n) {
          *n = 1000; return 0; }
        """))
    source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "standins", "mspti_standin.c")
    path = build_standin(source, trap, "libmspti.so", extra_flags=[str(trap / "trap.c")])
    program = textwrap.dedent(f"""
        import ctypes, json, sys, warnings
        sys.path.insert(0, {os.path.join(TESTS, "backends")!r})
        warnings.simplefilter("ignore")
        import flagtree.profiler as profiler
        lib = ctypes.CDLL({path!r}, mode=ctypes.RTLD_GLOBAL)
        from triton_launch import triton_launch
        lib.standin_rt_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint64]
        lib.standin_rt_launch.restype = ctypes.c_uint64
        profiler.start(name={str(tmp_path / 't')!r}, backend="cann", data="trace")
        with profiler.scope("host_scope"):
            triton_launch(lib, "add_kernel", ns=2000)
        profiler.finalize()
        """)
    env = dict(os.environ, FLAGTREE_PROFILER_MSPTI_PATH=path, PYTHONPATH=os.pathsep.join([PACKAGE_ROOT, TESTS]))
    env.pop("LD_PRELOAD", None)
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    meta = load_meta(tmp_path / "t")
    assert meta["dropped_records"] == 0 and meta["kernel_records"] == 1
    events = json.load(open(tmp_path / "t.chrome_trace"))["traceEvents"]
    scope = next(e for e in events if e.get("name") == "host_scope" and e.get("ph") == "X")
    kernel = next(e for e in events if e.get("name") == "add_kernel" and e.get("ph") == "X")
    assert scope["ts"] <= kernel["ts"] <= scope["ts"] + scope["dur"]


def test_without_ld_preload_the_session_says_once_what_it_cannot_see(standin, tmp_path):
    backend = get_backend("cann")
    backend._told_preload = False
    with pytest.warns(UserWarning, match="MSPTI_ERROR_WITHOUT_LD_PRELOAD.*flagtree-profiler -b cann") as caught:
        profiler.start(name=str(tmp_path / "a"), backend="cann")
    assert len(caught) == 1
    with profiler.scope("ops"):
        standin.standin_launch(b"aclnn_kernel", LAUNCH, 3, 100)  # another library's aclrtLaunchKernel
        triton_launch(standin, "add_kernel")
    profiler.finalize()
    root = load_tree(tmp_path / "a")[0]
    assert find(root, "ops", "add_kernel")["metrics"]["count"] == 1
    assert find(root, "aclnn_kernel")["metrics"]["count"] == 1  # not seen at its launch: ROOT
    meta = load_meta(tmp_path / "a")
    assert meta["mspti_callbacks"].startswith("refused: MSPTI_ERROR_WITHOUT_LD_PRELOAD")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per process
        profiler.start(name=str(tmp_path / "b"), backend="cann")
        profiler.finalize()


PRELOADED_TARGET = """
import ctypes, os, sys
sys.path.insert(0, {backends!r})
import flagtree.profiler as profiler
from triton_launch import triton_launch
lib = ctypes.CDLL({path!r}, mode=ctypes.RTLD_GLOBAL)
u32, u64 = ctypes.c_uint32, ctypes.c_uint64
lib.standin_launch.argtypes = [ctypes.c_char_p, u32, u32, u64]
lib.standin_rt_launch.argtypes = [ctypes.c_char_p, u32, u64]
lib.standin_memcpy.argtypes = [u32, u64, u32, u64]
import subprocess
mapped = any({path!r} in line for line in open("/proc/self/maps"))
print("MAPPED", mapped, "LD_PRELOAD", os.environ.get("LD_PRELOAD"), flush=True)
subprocess.run([sys.executable, "-c", "import os; print('CHILD', os.environ.get('LD_PRELOAD'), flush=True)"])
with profiler.scope("ops"):
    lib.standin_launch(b"aclnn_kernel", {aiv}, 3, 100)
    lib.standin_memcpy({htod}, 4096, 3, 300)
    triton_launch(lib, "add_kernel")
"""


def test_the_command_line_preloads_mspti_so_library_launches_are_seen(standin, tmp_path):
    # MSPTI reads LD_PRELOAD once (MSPTI_STANDIN_READ_ONCE): once the session started, processes
    # the program starts no longer get libmspti.so preloaded.
    (tmp_path / "target.py").write_text(PRELOADED_TARGET.format(backends=os.path.join(TESTS, "backends"), path=standin.path, aiv=AIV_LAUNCH,
                                                                htod=HTOD))
    env = dict(os.environ, FLAGTREE_PROFILER_MSPTI_PATH=standin.path, PYTHONPATH=os.pathsep.join([PACKAGE_ROOT, TESTS]),
               MSPTI_STANDIN_READ_ONCE="1")
    env.pop("LD_PRELOAD", None)
    done = subprocess.run([sys.executable, "-m", "flagtree.profiler.cli", "-b", "cann", "-n", "run", "target.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "MAPPED True LD_PRELOAD None" in done.stdout and "CHILD None" in done.stdout
    assert "WITHOUT_LD_PRELOAD" not in done.stderr
    root = load_tree(tmp_path / "run")[0]
    assert find(root, "ops", "aclnn_kernel")["metrics"]["count"] == 1
    assert find(root, "ops", "add_kernel")["metrics"]["count"] == 1
    assert find(root, "ops", "memcpy HtoD")["metrics"]["bytes"] == 4096
    meta = load_meta(tmp_path / "run")
    assert meta["mspti_callbacks"] == "enabled" and meta["mspti_records"]["traced_callbacks"] == 6
    # The copy's mapping comes before its callback: it joins by host span (test_cann_launch_paths.py).
    assert meta["mspti_join"]["joined_by_external_id"] == 2
    assert meta["mspti_join"]["records_by_kind"]["memcpy"]["host_span"] == 1


def test_the_command_line_says_when_it_finds_no_mspti_to_preload(tmp_path):
    (tmp_path / "target.py").write_text("print('ran')\n")
    env = dict(os.environ, FLAGTREE_PROFILER_MSPTI_PATH=str(tmp_path / "none"), ASCEND_HOME_PATH=str(tmp_path),
               ASCEND_TOOLKIT_HOME=str(tmp_path), HOME=str(tmp_path), PYTHONPATH=PACKAGE_ROOT)
    env.pop("LD_PRELOAD", None)
    done = subprocess.run([sys.executable, "-m", "flagtree.profiler.cli", "-b", "cann", "-n", "run", "target.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "no libmspti.so found to preload" in done.stderr


def test_the_command_preloads_where_cann_would_be_chosen(tmp_path, monkeypatch):
    from flagtree.profiler.backends import command_backend

    assert command_backend("cann") == "cann" and command_backend("nvidia") == "nvidia"
    assert command_backend(None) is None  # no torch_npu, no triton-ascend here
    (tmp_path / "torch_npu").mkdir()
    (tmp_path / "torch_npu" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert command_backend(None) == "cann" and command_backend("nvidia") == "nvidia"


def test_mstx_ranges_mirror_scopes_in_our_domain(standin, tmp_path):
    assert not hasattr(standin, "mstxDomainCreateA")  # MSPTI has none: they are libms_tools_ext.so's
    base = tmp_path / "mstx"
    stats = _native.cann.mspti_stats()
    start(base, mode="mstx_enabled=true")
    with profiler.scope("outer"):
        with profiler.scope("inner"):
            triton_launch(standin, "add_kernel")
        user = standin.mstx.mstxRangeStartA(b"users_own", None)  # another domain: counted apart
        standin.mstx.mstxRangeEnd(user)
        assert standin.standin_state(STATE_RANGES_OPEN) == 1  # "outer" is still open
    assert standin.standin_state(STATE_RANGES_OPEN) == 0
    profiler.finalize()
    meta = load_meta(base)
    assert meta["mstx"]["ranges_started"] - meta["mstx"]["ranges_ended"] == 0
    after = _native.cann.mspti_stats()
    assert after["scope_marker_records"] - stats["scope_marker_records"] == 4  # 2 ranges: start + end each
    assert after["marker_records"] - stats["marker_records"] == 6
    assert find(load_tree(base)[0], "outer", "inner", "add_kernel")["metrics"]["count"] == 1
    # Mirroring ends with the session: scopes of a plain session open no ranges.
    started = _native.cann.mstx_stats()["ranges_started"]
    start(tmp_path / "plain")
    with profiler.scope("not_mirrored"):
        triton_launch(standin, "add_kernel")
    profiler.finalize()
    assert _native.cann.mstx_stats()["ranges_started"] == started


def test_scope_open_before_mirroring_is_left_alone(standin, tmp_path):
    with profiler.scope("before"):
        start(tmp_path / "b", mode="mstx_enabled=on")
        with profiler.scope("during"):
            triton_launch(standin, "add_kernel")
    profiler.finalize()
    assert standin.standin_state(STATE_RANGES_OPEN) == 0
    stats = _native.cann.mstx_stats()
    assert stats["ranges_started"] == stats["ranges_ended"]


def test_vendor_metrics_beside_mspti_are_refused(standin, tmp_path):
    # Ascend documents that aclprof/msprof in the same process as MSPTI loses data.
    with pytest.raises(ValueError, match="aclprof, which must not run in the same process as MSPTI"):
        start(tmp_path / "vm", mode="runtime_base:device_id=1:vendor_metrics=aicore,bandwidth")
    assert profiler.session.open_sessions() == [] and standin.standin_state(STATE_SUBSCRIBED) == 0


def test_mode_grammar_errors():
    backend = get_backend("cann")
    with pytest.raises(ValueError, match="unknown vendor metric 'occupancy'.*valid: aicore, bandwidth"):
        backend.check_mode("vendor_metrics=occupancy")
    with pytest.raises(ValueError, match=r"unknown option 'devices'.*device_id=<n>:mstx_enabled=on\|off"):
        backend.check_mode("devices=0")
    with pytest.raises(ValueError, match="mstx_enabled must be on or off"):
        backend.check_mode("mstx_enabled=maybe")
    with pytest.raises(ValueError, match="device_id must be between 0 and"):
        backend.check_mode("device_id=-1")
    assert backend.check_mode("mstx_enabled=true:device_id=0").canonical() == "runtime_base=on:device_id=0:mstx_enabled=true"


def test_profiling_mode_environment_is_detected(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("PROFILING_MODE", "true")
    with pytest.raises(RuntimeError, match="PROFILING_MODE=true"):
        start(tmp_path / "env")
    assert standin.standin_state(STATE_SUBSCRIBED) == 0


def test_torch_npu_profiler_is_detected(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_NVTX", "0")  # the nvtx hook would look for torch.cuda
    fake_torch = types.SimpleNamespace(autograd=types.SimpleNamespace(
        profiler=types.SimpleNamespace(_is_profiler_enabled=True)))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "torch_npu", types.SimpleNamespace())
    with pytest.raises(RuntimeError, match="torch_npu's profiler"):
        start(tmp_path / "tp")
    fake_torch.autograd.profiler._is_profiler_enabled = False
    start(tmp_path / "ok")
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


def test_library_search_order(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "home"))
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(tmp_path / "toolkit"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("FLAGTREE_PROFILER_MSPTI_PATH", str(tmp_path / "x" / "libmspti.so"))
    found = [("FLAGTREE_PROFILER_MSPTI_PATH", str(tmp_path / "x" / "libmspti.so")), ("already loaded", standin.path)]
    for where, root in (("${ASCEND_HOME_PATH}", str(tmp_path / "home")), ("${ASCEND_TOOLKIT_HOME}", str(tmp_path / "toolkit")),
                        ("/usr/local/Ascend/cann", "/usr/local/Ascend/cann"),
                        ("${HOME}/Ascend/cann", str(tmp_path / "user" / "Ascend" / "cann")),
                        ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/ascend-toolkit/latest")):
        found += [(f"{where}/lib64", f"{root}/lib64/libmspti.so"),
                  (f"{where}/tools/mspti/lib64", f"{root}/tools/mspti/lib64/libmspti.so")]
    assert get_backend("cann").library_candidates() == found + [("loader path", "libmspti.so")]
