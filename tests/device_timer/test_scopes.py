"""Kernel-side scopes in a device_timer session, without CUPTI: buffers an H200 wrote (Triton 3.6)
read back through the scopes' real pool, collector and drain, their kernel records delivered with
the host ring's clock mapping, beside a ring-stamped kernel in the same session; and both compiler
hooks of such a session compiling real kernels for sm_90."""
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest
import torch

import flagtree.profiler as profiler
from flagtree.profiler import _native, session as sessions
from flagtree.profiler.backends.device_timer import DeviceTimerState, compiler_hook
from flagtree.profiler.backends.device_timer.scopes import DeviceTimerScopes, scope_options
from flagtree.profiler.kernel_scopes.kernel_info import KernelInfo
from flagtree.profiler.kernel_scopes.layout import BlockLayout, SHORT_HEADER_WORDS
from support.device_timer_ring import allocate as ring_allocate
from support.profiles import find, load_tree
from support.triton_needs import needs_compiler_hooks

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "instrumentation", "fixtures")
FUNCTION = 0x7F00_5678
OFFSET = 1_796_015_000_000_000_000  # the ring's probed offset: global timer - profile clock
STREAM = 0x5000


def recorded():
    """(KernelInfo, raw bytes) of an 8-block launch of add_two_scopes an H200 recorded."""
    with open(os.path.join(FIXTURES, "add_8blocks.json")) as f:
        meta = json.load(f)
    with open(os.path.join(FIXTURES, "add_8blocks.raw"), "rb") as f:
        raw = f.read()
    info = KernelInfo("add_two_scopes", BlockLayout(**meta["layout"]),
                      {int(k): v for k, v in meta["scope_names"].items()}, {})
    return info, raw


def block_stamps(raw, info):
    words = np.frombuffer(raw, dtype="<u4").reshape(-1, info.layout.stride // 4).astype(np.uint64)
    return words[:, 4] | (words[:, 5] << np.uint64(32)), words[:, 8] | (words[:, 9] << np.uint64(32))


@pytest.fixture
def scopes(ring, allocator, monkeypatch):
    """The scopes of a device_timer session over host memory, behind the host ring's allocator;
    CUPTI's correlation calls fail the test if anything asks them."""
    def no_cupti(*args):
        raise AssertionError("CUPTI's launch correlation asked in a device_timer session")

    monkeypatch.setattr(_native.instrumentation, "instrumentation_take_correlation", no_cupti)
    monkeypatch.setattr(_native.instrumentation, "instrumentation_watch_launches", no_cupti)
    ring(64, 16, offset_ns=OFFSET)
    from triton.runtime import _allocation

    made = DeviceTimerScopes(new_buffer=lambda n: torch.zeros(n, dtype=torch.uint8), synchronize=lambda: None)
    made.install(scope_options(), _allocation._NULL_ALLOCATOR)  # what the ring's allocator forwarded to
    yield made
    made.stop()


def session(tmp_path, scopes, data="tree", name="p"):
    sid = profiler.start(str(tmp_path / name), backend="interpreter", data=data)
    opened = sessions._sessions[sid]
    opened.state = DeviceTimerState()  # what a device_timer session holds (this one stands in for it)
    scopes.scopes.attach_session(opened)
    return sid


def launch(scopes, info, raw, name="add_two_scopes", function=FUNCTION):
    """A launch as Triton's launcher and the GPU make it: the profile allocator (the ring's,
    forwarding to the scopes' pool), the kernel's buffers, the launch-exit hook. Its correlation."""
    scopes.scopes.know_kernel(function, info)  # as its load does
    piece = _native.device_timer.device_timer_allocate(len(raw), 128, STREAM)
    scopes.scopes.collector.pool.view(piece).numpy()[:] = np.frombuffer(raw, dtype=np.uint8)
    scopes.scopes.launch_exit(types.SimpleNamespace(data={"function": function, "name": name, "stream": STREAM}))
    return scopes.scopes.collector.launches[-1].correlation


def finish(sid, scopes):
    scopes.scopes.drain()
    _native.device_timer.device_timer_drain()
    scopes.scopes.detach_session(sessions._sessions[sid])
    profiler.finalize(sid)


def test_scoped_kernel_time_spans_its_blocks_and_carries_its_scopes(tmp_path, scopes):
    info, raw = recorded()
    sid = session(tmp_path, scopes)
    with profiler.scope("step"):
        correlations = [launch(scopes, info, raw) for _ in range(3)]
        stamped = ring_allocate()  # a kernel without scopes: a ring slot, as before
    kid = _native.device_timer.device_timer_name_kernel("plain_kernel")
    _native.testing.device_timer_host_meta(stamped, kid, (4, 1, 1), 128)
    _native.testing.device_timer_host_stamp(stamped, 0, OFFSET + 1_000, OFFSET + 1_700)
    finish(sid, scopes)
    assert all(0xD0000000 <= c < 0xE0000000 for c in correlations)  # the device timer's ids
    assert len(set(correlations)) == 3
    root, _ = load_tree(tmp_path / "p.hatchet")
    kernel = find(root, "step", "add_two_scopes")
    starts, ends = block_stamps(raw, info)
    assert kernel["metrics"]["count"] == 3
    assert kernel["metrics"]["time (ns)"] == 3 * int(ends.max() - starts.min())  # 576 ns a launch
    load, store = find(kernel, "load"), find(kernel, "store")
    assert load["frame"]["kind"] == "device_scope" and store["frame"]["kind"] == "device_scope"
    assert load["metrics"]["count"] == 3 * 8 * info.layout.num_warps and load["metrics"]["cycles"] > 0
    assert store["metrics"]["normalized_cycles"] > 0
    plain = find(root, "step", "plain_kernel")
    assert plain["metrics"]["count"] == 1 and plain["metrics"]["time (ns)"] == 700
    assert scopes.snapshot() == {"scoped_launches_timed": 3, "scoped_launches_untimed": 0}


def test_scoped_kernel_starts_on_the_profile_clock_through_the_ring_offset(tmp_path, scopes):
    info, raw = recorded()
    sid = session(tmp_path, scopes, data="trace")
    launch(scopes, info, raw)
    stats = scopes.scopes.session_stats(sessions._sessions[sid])  # drains; writes the device scopes
    finish(sid, scopes)
    starts, ends = block_stamps(raw, info)
    trace = json.loads((tmp_path / "p.chrome_trace").read_text())
    event = next(e for e in trace["traceEvents"] if e["name"] == "add_two_scopes" and e["cat"] == "kernel")
    origin_ns = trace["otherData"]["trace_origin_monotonic_ns"]
    assert event["dur"] * 1000 == pytest.approx(int(ends.max() - starts.min()))
    assert event["ts"] * 1000 + origin_ns == pytest.approx(int(starts.min()) - OFFSET, abs=1)
    assert event["args"]["grid"] == [8, 1, 1] and event["args"]["block"] == [128, 1, 1]
    scoped = json.loads((tmp_path / "p.device_scopes.json").read_text())["traceEvents"]
    assert stats["device_scope_trace"].endswith("p.device_scopes.json") and stats["instrumentation_launches"] == 1
    assert {e["name"] for e in scoped} == {"load", "store"}
    assert {e["pid"] for e in scoped} == {f"add_two_scopes (launch {event['args']['correlation']}) block {b}"
                                          for b in range(8)}
    # Proton's call_stack: the host context of the kernel's event above, from the root, then the kernel
    host = [name for name in event["args"]["context"].split("/") if name]
    assert all(e["args"]["call_stack"] == ["ROOT", *host, "add_two_scopes"] for e in scoped)


def test_launches_without_header_stamps_or_with_bad_blocks_are_counted_untimed(tmp_path, scopes):
    info, raw = recorded()
    short = KernelInfo(info.name, BlockLayout(stride=info.layout.stride, num_warps=info.layout.num_warps,
                                              header_words=SHORT_HEADER_WORDS), info.scope_names, {})
    bad = bytearray(raw)
    bad[info.layout.stride * 3:info.layout.stride * 3 + 4] = b"\0\0\0\0"  # block 3 never ran
    sid = session(tmp_path, scopes)
    launch(scopes, info, raw)
    short_correlation = launch(scopes, short, raw, name="short_header", function=FUNCTION + 1)
    launch(scopes, info, bytes(bad))
    launch(scopes, info, raw, name="unknown_kernel", function=FUNCTION + 2)
    del scopes.scopes.registry[FUNCTION + 2]  # a kernel whose metadata could not be read
    scopes.scopes.drain()
    assert _native.session.pending_launches(sessions._sessions[sid].slot) == 0  # the untimed are forgotten
    finish(sid, scopes)
    assert short_correlation >= 0xD0000000
    assert scopes.snapshot() == {"scoped_launches_timed": 1, "scoped_launches_untimed": 3}
    root, _ = load_tree(tmp_path / "p.hatchet")
    assert find(root, "short_header") is None and find(root, "unknown_kernel") is None  # no made-up time
    assert find(root, "add_two_scopes")["metrics"]["count"] == 1
    kept = find(root, "<unmatched launch>", "load")  # the untimed launches' scopes are not lost
    assert kept["metrics"]["count"] == 2 * 8 * info.layout.num_warps - info.layout.num_warps  # block 3 bad


@needs_compiler_hooks
def test_both_compiler_hooks_share_one_mode_and_each_kernel_gets_its_own(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, os.path.join(HERE, "compile_scoped.py")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["mode"].startswith(out["scopes_mode"] + "+" + compiler_hook.MODE_PREFIX + ":")
    assert out["mode_after_stamps"] == out["scopes_mode"] and out["mode_restored"]
    # the scoped kernel: proton's scope buffers (a 10-word header with the stamps), no ring slot
    assert out["scoped_scratch"][1] == 128 and out["scoped_scratch"][0] > 0 and out["scoped_stamps"] == 0
    assert out["scoped_header_words"] == 10 and out["scoped_scope_names"] == ["load", "store"]
    # the plain kernel in the same compile: stamped, a ring slot
    assert out["plain_scratch"] == [16, out["align_tag"]] and out["plain_stamps"] == 1
    assert out["stats"] == {"stamped": 1, "not_stamped": 0, "scoped": 1}


def test_a_trace_session_without_scoped_launches_writes_no_device_scope_trace(tmp_path, scopes):
    (tmp_path / "p.device_scopes.json").write_text("{}")  # an earlier run's, which must not stand beside
    sid = session(tmp_path, scopes, data="trace")
    opened = sessions._sessions[sid]
    stamped = ring_allocate()
    _native.testing.device_timer_host_meta(stamped, _native.device_timer.device_timer_name_kernel("plain"), (1, 1, 1), 32)
    _native.testing.device_timer_host_stamp(stamped, 0, OFFSET + 1_000, OFFSET + 1_500)
    stats = scopes.scopes.session_stats(opened)
    finish(sid, scopes)
    assert stats["device_scope_trace"] is None and stats["instrumentation_launches"] == 0
    assert not (tmp_path / "p.device_scopes.json").exists()
    assert any(e["name"] == "plain" for e in json.loads((tmp_path / "p.chrome_trace").read_text())["traceEvents"])


def test_sessions_join_scopes_to_records_only_once_a_kernel_with_scopes_is_known(tmp_path, scopes):
    """Joining costs every record a look-up: a session whose launches carry no scopes goes
    without it, and one open when a scoped kernel loads (before its first launch) joins them.
    The scopes reach the session before their record does, so no session keeps a kernel node
    per correlation for them (a map that would grow with the launches)."""
    def joins(sid):
        return _native.session.session_stats(sessions._sessions[sid].slot)["extras_enabled"]

    def kept(sid):
        return _native.session.session_stats(sessions._sessions[sid].slot)["nodes_kept_for_extras"]

    info, raw = recorded()
    first = session(tmp_path, scopes)
    plain = ring_allocate()
    _native.testing.device_timer_host_meta(plain, _native.device_timer.device_timer_name_kernel("plain"), (1, 1, 1), 32)
    _native.testing.device_timer_host_stamp(plain, 0, OFFSET + 1_000, OFFSET + 1_500)
    _native.device_timer.device_timer_drain()
    assert not joins(first)
    launch(scopes, info, raw)  # its kernel loads first
    assert joins(first)
    second = session(tmp_path, scopes, name="q")  # opened with the scoped kernel known
    assert joins(second)
    launch(scopes, info, raw)
    scopes.scopes.drain()
    _native.device_timer.device_timer_drain()
    assert kept(first) == 0 and kept(second) == 0
    finish(second, scopes)
    finish(first, scopes)
    for name, count in (("p", 2), ("q", 1)):
        root, _ = load_tree(tmp_path / f"{name}.hatchet")
        kernel = find(root, "add_two_scopes")
        assert kernel["metrics"]["count"] == count
        assert find(kernel, "load")["metrics"]["count"] == count * 8 * info.layout.num_warps
