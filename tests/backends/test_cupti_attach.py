"""CUPTI kept attached between sessions (backends/cupti_attach.py, DialectTracer park/resume), and
records on a clock off the host's, on the CPU: the real nvidia backend, native tracer and writers
against tests/standins/cupti_activity_standin.c, a libcupti stand-in with the documented
one-subscriber rule, callbacks and activity buffers. Only the CUDA driver is faked (no GPU here)."""
import ctypes
import json
import subprocess
import sys
import time
import warnings

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from flagtree.profiler.backends.nvidia.backend import NvidiaBackend
from standins import build_standin, load_standin
from standins.build import cuda_header_flags
from vendor_outputs import kernels, load_meta, load_tree


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    path = build_standin("cupti_activity_standin.c", tmp_path_factory.mktemp("cupti"), "libcupti.so.13",
                         extra_flags=cuda_header_flags("activity"))
    lib = load_standin(path)
    lib.standin_launch.restype = ctypes.c_uint32
    lib.standin_launch_running.restype = ctypes.c_uint32
    lib.standin_count.argtypes = [ctypes.c_char_p]
    lib.standin_record_clock_offset.argtypes = [ctypes.c_longlong]
    lib.standin_record_clock.argtypes = [ctypes.c_int]
    lib.path = path
    return lib


@pytest.fixture(autouse=True)
def nvidia_on_standin(standin, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_PATH", standin.path)
    monkeypatch.setattr(NvidiaBackend, "_driver_major", lambda self: 13)
    yield
    profiler.finalize()
    profiler.release()
    standin.standin_hold_slot(0)
    standin.standin_record_clock_offset(0)
    # The process-wide backend remembers the library it traced with (counters use it): not ours
    # for the next test module.
    get_backend("nvidia")._library = None


def count(lib, what):
    return lib.standin_count(what.encode())


def session(lib, base, launches, data="tree"):
    profiler.start(name=str(base), backend="nvidia", data=data)
    for _ in range(launches):
        lib.standin_launch()
    profiler.finalize()
    return load_meta(base)


def kernel_count(base):
    root, _ = load_tree(base)
    return sum(int(node["metrics"]["count"]) for _, node in kernels(root))


def test_later_sessions_do_not_subscribe_or_enable_again(standin, tmp_path):
    subscribes, enables = count(standin, "subscribe"), count(standin, "kind_enable")
    assert session(standin, tmp_path / "a", 3)["kernel_records"] == 3
    assert count(standin, "subscribe") == subscribes + 1
    enabled_once = count(standin, "kind_enable")
    assert enabled_once > enables
    # Parked: still subscribed with kernel activity on, launch callbacks off, nothing finalized.
    assert standin.standin_subscribed() and standin.standin_kernel_kind_enabled()
    assert not standin.standin_launch_callback_enabled()
    assert _native.nvidia.cupti_attach_stats()["parked"]
    for name in ("b", "c"):
        assert session(standin, tmp_path / name, 2)["kernel_records"] == 2
        assert kernel_count(tmp_path / name) == 2
    assert count(standin, "subscribe") == subscribes + 1
    assert count(standin, "kind_enable") == enabled_once


def test_idle_launches_are_discarded_and_never_counted_later(standin, tmp_path):
    session(standin, tmp_path / "a", 1)
    callbacks = count(standin, "callback")
    discarded = _native.nvidia.cupti_attach_stats()["idle_discarded"]
    for _ in range(5):  # while parked: records written by the library, no callback of ours
        standin.standin_launch()
    running = standin.standin_launch_running()  # still on the GPU when the next session starts
    assert count(standin, "callback") == callbacks
    profiler.start(name=str(tmp_path / "b"), backend="nvidia")
    standin.standin_finish_running()  # its record arrives inside the session
    mine = standin.standin_launch()
    assert mine > running
    profiler.finalize()
    meta = load_meta(tmp_path / "b")
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (1, 0, 0)
    assert kernel_count(tmp_path / "b") == 1
    assert _native.nvidia.cupti_attach_stats()["idle_discarded"] == discarded + 6


def test_drops_while_parked_are_not_a_later_sessions(standin, tmp_path):
    session(standin, tmp_path / "a", 1)
    standin.standin_drop(4)
    standin.standin_launch()  # a buffer comes back while parked, with the drop count
    assert session(standin, tmp_path / "b", 2)["dropped_records"] == 0
    profiler.start(name=str(tmp_path / "c"), backend="nvidia")
    standin.standin_launch()
    standin.standin_drop(3)
    with pytest.warns(UserWarning, match="3 records dropped"):
        profiler.finalize()
    assert load_meta(tmp_path / "c")["dropped_records"] == 3


def test_release_unsubscribes_finalizes_and_the_next_start_subscribes_again(standin, tmp_path):
    session(standin, tmp_path / "a", 1)
    subscribes, finalizes = count(standin, "subscribe"), count(standin, "finalize")
    unsubscribes = count(standin, "unsubscribe")
    assert profiler.release() is True
    assert not standin.standin_subscribed() and not standin.standin_kernel_kind_enabled()
    assert (count(standin, "unsubscribe"), count(standin, "finalize")) == (unsubscribes + 1, finalizes + 1)
    assert profiler.release() is False  # nothing left to release
    # Another client may take the slot now; ours then says who may hold it.
    standin.standin_hold_slot(1)
    with pytest.raises(_native.SubscriberTaken, match="another CUPTI client already holds"):
        profiler.start(name=str(tmp_path / "x"), backend="nvidia")
    standin.standin_hold_slot(0)
    assert session(standin, tmp_path / "b", 2)["kernel_records"] == 2
    assert count(standin, "subscribe") == subscribes + 1


def test_release_while_a_session_runs_keeps_it(standin, tmp_path):
    profiler.start(name=str(tmp_path / "a"), backend="nvidia")
    standin.standin_launch()
    assert profiler.release() is False
    standin.standin_launch()
    profiler.finalize()
    assert load_meta(tmp_path / "a")["kernel_records"] == 2


def test_idle_release_fires(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0.2")
    session(standin, tmp_path / "a", 1)
    assert standin.standin_subscribed()
    deadline = time.monotonic() + 10
    while standin.standin_subscribed() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not standin.standin_subscribed()
    assert not _native.nvidia.cupti_attach_stats()["parked"]


def test_idle_release_runs_once_per_idle_period_on_the_native_clock(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0.2")
    fired = _native.testing.cupti_idle_releases_fired()
    session(standin, tmp_path / "a", 1)
    session(standin, tmp_path / "b", 1)  # the second finalize restarts the clock: one release
    deadline = time.monotonic() + 10
    while standin.standin_subscribed() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not standin.standin_subscribed()
    time.sleep(0.3)
    assert _native.testing.cupti_idle_releases_fired() == fired + 1


def test_a_forked_child_runs_its_own_idle_clock(standin, tmp_path, monkeypatch):
    import os

    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "600")
    session(standin, tmp_path / "parent", 1)  # the parent's clock runs (600 s) in its own thread
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # no clock thread here: the child's finalize must start one
        ok = False
        try:
            os.environ["FLAGTREE_PROFILER_CUPTI_IDLE_S"] = "0.2"
            session(standin, tmp_path / "child", 1)
            deadline = time.monotonic() + 10
            while standin.standin_subscribed() and time.monotonic() < deadline:
                time.sleep(0.05)
            ok = not standin.standin_subscribed()
        finally:
            os.write(write, b"1" if ok else b"0")
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert standin.standin_subscribed()  # the parent's subscription waits for its own clock


def test_idle_release_spares_a_session_started_meanwhile(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0.2")
    session(standin, tmp_path / "a", 1)
    profiler.start(name=str(tmp_path / "b"), backend="nvidia")
    time.sleep(0.5)  # past the first session's idle time
    assert standin.standin_subscribed()
    standin.standin_launch()
    profiler.finalize()
    assert load_meta(tmp_path / "b")["kernel_records"] == 1


def test_idle_zero_releases_at_every_finalize(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0")
    subscribes = count(standin, "subscribe")
    session(standin, tmp_path / "a", 1)
    assert not standin.standin_subscribed()
    session(standin, tmp_path / "b", 1)
    assert count(standin, "subscribe") == subscribes + 2


def test_bad_idle_value_is_an_error(monkeypatch):
    from flagtree.profiler import _env

    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "soon")
    with pytest.raises(ValueError, match="FLAGTREE_PROFILER_CUPTI_IDLE_S"):
        _env.cupti_idle_seconds()


@pytest.mark.parametrize("left_open", [False, True], ids=["after-finalize", "session-left-open"])
def test_interpreter_exit_releases(standin, tmp_path, left_open):
    import os

    script = f"""
import atexit, ctypes, os, sys
lib = ctypes.CDLL({standin.path!r}, mode=ctypes.RTLD_GLOBAL)
lib.standin_count.argtypes = [ctypes.c_char_p]
# atexit runs the last-registered hook first: this one, registered before the profiler's, runs after it.
atexit.register(lambda: print("at exit: subscribed", lib.standin_subscribed(),
                              "finalized", lib.standin_count(b"finalize")))
import flagtree.profiler as profiler
from flagtree.profiler.backends.nvidia.backend import NvidiaBackend
NvidiaBackend._driver_major = lambda self: 13
profiler.start(name={str(tmp_path / "p")!r}, backend="nvidia")
lib.standin_launch()
if not {left_open!r}:
    profiler.finalize()
print("after finalize: subscribed", lib.standin_subscribed())
"""
    env = dict(os.environ, FLAGTREE_PROFILER_CUPTI_PATH=standin.path, FLAGTREE_PROFILER_CUPTI_IDLE_S="600")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "after finalize: subscribed 1" in out.stdout
    assert "at exit: subscribed 0 finalized 1" in out.stdout
    assert load_meta(tmp_path / "p")["kernel_records"] == 1


def test_a_forked_child_exiting_leaves_the_parents_subscription_alone(standin, tmp_path):
    import os

    script = f"""
import atexit, ctypes, os, sys
lib = ctypes.CDLL({standin.path!r}, mode=ctypes.RTLD_GLOBAL)
lib.standin_count.argtypes = [ctypes.c_char_p]
atexit.register(lambda: print(("child" if os.getpid() != parent else "parent"), "finalized",
                              lib.standin_count(b"finalize"), flush=True))
parent = os.getpid()
import flagtree.profiler as profiler
from flagtree.profiler.backends.nvidia.backend import NvidiaBackend
NvidiaBackend._driver_major = lambda self: 13
profiler.start(name={str(tmp_path / "p")!r}, backend="nvidia")
lib.standin_launch()
profiler.finalize()
pid = os.fork()
if pid == 0:
    sys.exit(0)  # through the atexit hooks
os.waitpid(pid, 0)
"""
    env = dict(os.environ, FLAGTREE_PROFILER_CUPTI_PATH=standin.path, FLAGTREE_PROFILER_CUPTI_IDLE_S="600")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "child finalized 0" in out.stdout
    assert "parent finalized 1" in out.stdout


def trace_events(base):
    with open(str(base) + ".chrome_trace") as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    launches = [e for e in events if e.get("cat") == "launch" and e.get("ph") == "X"]
    return kernels, launches


@pytest.mark.parametrize("offset_ms", [-31.2, -0.5])
def test_records_on_a_clock_behind_the_host_s_are_moved_after_their_launch_calls(standin, tmp_path, offset_ms):
    standin.standin_record_clock_offset(int(offset_ms * 1e6))
    base = tmp_path / "early"
    profiler.start(name=str(base), backend="nvidia", data="trace")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            standin.standin_launch()
        profiler.finalize()
    meta = load_meta(base)
    # The stand-in stamps each kernel 1 us after its launch call on the host's clock, plus the offset.
    assert meta["device_clock_shift_ns"] == pytest.approx(-offset_ms * 1e6 - 1000, abs=200_000)
    kernels, launches = trace_events(base)
    assert len(kernels) == 3 and len(launches) == 3
    for kernel, launch in zip(sorted(kernels, key=lambda e: e["ts"]), sorted(launches, key=lambda e: e["ts"])):
        assert kernel["dur"] == pytest.approx(5.0)
        assert 0 <= kernel["ts"] - launch["ts"] < 200  # us: after the call, as launched
    said = [str(w.message) for w in caught if "clock is off" in str(w.message)]
    assert len(said) == (1 if offset_ms <= -1 else 0), said


def test_records_on_the_host_s_clock_are_left_where_they_are(standin, tmp_path):
    base = tmp_path / "aligned"
    profiler.start(name=str(base), backend="nvidia", data="trace")
    for _ in range(3):
        standin.standin_launch()
    profiler.finalize()
    assert "device_clock_shift_ns" not in load_meta(base)
    kernels, launches = trace_events(base)
    assert len(kernels) == 3
    for kernel, launch in zip(sorted(kernels, key=lambda e: e["ts"]), sorted(launches, key=lambda e: e["ts"])):
        assert 0 <= kernel["ts"] - launch["ts"] < 200  # us: 1 us after the call, as stamped


def test_a_tree_keeps_durations_and_says_the_shift_without_a_warning(standin, tmp_path):
    standin.standin_record_clock_offset(-20_000_000)
    base = tmp_path / "tree"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a tree holds no absolute times: nothing to warn of
        meta = session(standin, base, 2)
    assert meta["device_clock_shift_ns"] > 19_000_000
    root, _ = load_tree(base)
    ((_, node),) = list(kernels(root))
    assert node["metrics"]["time (ns)"] == 2 * 5000
