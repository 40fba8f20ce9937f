"""backend="tianshu" with device times from the device_timer route, kernel-side scopes compiled in
beside the stamps and data="trace": the session's launch log has two users, tianshu's
``launch_log=on`` (``<name>.launches.json``) and the scopes' device-scope trace (each event's
call_stack). Each must get every launch, whichever reads first.

The stand-in CoreX target's LLVM IR stamps keep the scopes off (Triton's proton lowering is
NVIDIA's), so the test lets them in as on a target whose stamps are PTX; the ring is the host
stand-in, the scope buffers host memory filled with what an H200 recorded."""
import json
import os
import types

import numpy as np
import pytest
import torch

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from flagtree.profiler.backends.device_timer import DeviceTimerBackend
from flagtree.profiler.backends.device_timer.scopes import DeviceTimerScopes
from flagtree.profiler.kernel_scopes.kernel_info import KernelInfo
from flagtree.profiler.kernel_scopes.layout import BlockLayout
from standins import corex_triton

T = _native.testing
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "instrumentation", "fixtures")
FUNCTION = 0x7F00_9ABC
STREAM = 0x77


def _host_ring(slots, batch, graph_records):
    T.device_timer_host_ring(slots, batch, 0, graph_records=graph_records)
    return {"offset_ns": 0, "uncertainty_ns": 0, "realtime_minus_probe_ns": 0}


@pytest.fixture
def scoped_corex(monkeypatch):
    """The stand-in CoreX target active, the ring on the host, the device timer's kernel-side
    scopes over host memory; the scopes of the session's device timer, all undone after."""
    timer = get_backend("device_timer")
    monkeypatch.setattr(timer, "start_ring", _host_ring)
    monkeypatch.setattr(DeviceTimerBackend, "scopes_unavailable", lambda self: None)
    monkeypatch.setattr(timer, "_kept_scopes", DeviceTimerScopes(
        new_buffer=lambda n: torch.zeros(n, dtype=torch.uint8), synchronize=lambda: None))
    active = corex_triton.install(monkeypatch).active
    yield active, timer
    if _native.device_timer.device_timer_running():
        T.device_timer_host_hold(False)
        _native.device_timer.device_timer_free()


def _recorded():
    """(KernelInfo, raw bytes) of an 8-block launch of add_two_scopes an H200 recorded."""
    with open(os.path.join(FIXTURES, "add_8blocks.json")) as f:
        meta = json.load(f)
    with open(os.path.join(FIXTURES, "add_8blocks.raw"), "rb") as f:
        raw = f.read()
    return KernelInfo("add_two_scopes", BlockLayout(**meta["layout"]),
                      {int(k): v for k, v in meta["scope_names"].items()}, {}), raw


def _stamped_launch(active, start_ns, end_ns):
    """The stand-in kernel compiled through its stages (stamped) and launched once."""
    metadata, _ = corex_triton.compile_kernel(active.compiler_cls(active.get_current_target()))

    def kernel(slot, grid_dims):
        T.device_timer_host_meta(slot, _native.device_timer.device_timer_kernel_id("add_kernel"), grid_dims, 64 * 4)
        T.device_timer_host_stamp(slot, 0, start_ns, end_ns)

    active.launcher_cls(metadata, kernel)((2, 1, 1), STREAM)


def _scoped_launch(scopes, info, raw):
    """A scoped kernel's launch as Triton makes it: loaded (the launch-exit hook goes in), its
    buffers from the profile allocator (the ring's, forwarding to the scopes' pool), filled by
    the "device", then Triton's launch-exit hook."""
    from triton import knobs

    scopes.know_kernel(FUNCTION, info)
    piece = _native.device_timer.device_timer_allocate(len(raw), 128, STREAM)
    scopes.collector.pool.view(piece).numpy()[:] = np.frombuffer(raw, dtype=np.uint8)
    knobs.runtime.launch_exit_hook(types.SimpleNamespace(
        data={"function": FUNCTION, "name": "add_two_scopes", "stream": STREAM}))
    return scopes.collector.launches[-1].correlation


def test_tianshu_s_launch_log_and_the_scopes_call_stacks_both_get_every_launch(tmp_path, scoped_corex):
    active, timer = scoped_corex
    info, raw = _recorded()
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu", data="trace", mode="launch_log=on")
    assert timer.scopes_state == "on"
    with profiler.scope("step"):
        _stamped_launch(active, 1_000, 26_000)
        scoped = _scoped_launch(timer.scopes.scopes, info, raw)
        _stamped_launch(active, 30_000, 40_000)
    profiler.finalize(sid)
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "device_timer" and meta["device_timer_scoped_launches_timed"] == 1
    log = json.load(open(meta["launch_log"]))["columns"]
    assert log["kind"] == ["kernel"] * 3
    assert sorted(log["name"]) == ["add_kernel", "add_kernel", "add_two_scopes"]
    assert scoped in log["correlation"]
    assert all([step[1] for step in path][:1] == ["step"] for path in log["path"])
    events = json.load(open(meta["device_scope_trace"]))["traceEvents"]
    assert events and all(e["args"]["call_stack"] == ["ROOT", "step", "add_two_scopes"] for e in events)

