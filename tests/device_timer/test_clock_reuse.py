"""The global timer's offset a device_timer session starts with (backends/device_timer/clock.py):
the previous session's finalize probe when it is recent and taken on the ring still running,
else a probe at start. The rule on a stand-in native module, then whole sessions on the stand-in
target with the ring on the host (whose probe is stood in: the host ring has no device clock)."""
import json
import types

import pytest
import triton.language as tl
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from flagtree.profiler.backends.device_timer import clock as ring_clock
from standins import compiled_kernels, corex_triton

KEY = (1 << 14, 1 << 12, 0)
TRUE_OFFSET = 300_000  # the stand-in device's global timer minus the monotonic clock


class Native:
    """What RingClock asks of the native module: its clock, whether a ring runs, the probe."""

    def __init__(self):
        self.now, self.running, self.set, self.offset = 1_000_000_000, True, [], 500
        self.core = types.SimpleNamespace(monotonic_ns=lambda: self.now)
        self.device_timer = types.SimpleNamespace(device_timer_running=lambda: self.running,
                                                  device_timer_set_clock=self.set.append,
                                                  device_timer_check_clock=self.check)
        self.failing = False

    def check(self):
        if self.failing:
            raise RuntimeError("no device clock")
        return {"offset_ns": self.offset, "uncertainty_ns": 40, "realtime_minus_probe_ns": 7}


@pytest.fixture
def probes():
    started = []

    def start_ring(*key):
        started.append(key)
        return {"offset_ns": 100, "uncertainty_ns": 50, "realtime_minus_probe_ns": 7}

    return started, start_ring


def test_a_recent_finalize_probe_is_the_next_start_offset(probes):
    started, start_ring = probes
    native, clock = Native(), ring_clock.RingClock()
    assert clock.start(native, start_ring, KEY)["age_ns"] == 0 and started == [KEY]
    native.offset = 130
    facts = clock.facts(native)
    assert facts["device_timer_clock_drift_ns"] == 30 and facts["device_timer_clock_probe_age_ns"] == 0
    native.now += 5_000_000
    again = clock.start(native, start_ring, KEY)
    assert started == [KEY] and native.set == [130]  # no probe: the ring takes finalize's offset
    assert again["offset_ns"] == 130 and again["age_ns"] == 5_000_000
    native.offset = 131
    facts = clock.facts(native)
    assert facts["device_timer_clock_offset_ns"] == 130 and facts["device_timer_clock_drift_ns"] == 1
    assert facts["device_timer_clock_probe_age_ns"] == 5_000_000


@pytest.mark.parametrize("change", ["old", "other ring", "not running", "freed", "check failed"])
def test_the_start_probes_when_the_last_probe_cannot_serve(probes, change):
    started, start_ring = probes
    native, clock = Native(), ring_clock.RingClock()
    clock.start(native, start_ring, KEY)
    native.failing = change == "check failed"
    clock.facts(native)
    key = KEY
    if change == "old":
        native.now += ring_clock.REUSE_NS
    elif change == "other ring":
        key = (KEY[0] * 2,) + KEY[1:]
    elif change == "not running":
        native.running = False
    elif change == "freed":
        clock.forget()
    assert clock.start(native, start_ring, key)["age_ns"] == 0
    assert started == [KEY, key] and native.set == []


def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


@pytest.fixture
def launch(monkeypatch, tmp_path):
    """One launch of a stamped kernel on the stand-in target, stamped by a device whose global
    timer runs TRUE_OFFSET ahead of the monotonic clock (its stamps kept in `stamps`); the ring
    on the host, its probe at finalize stood in by offsets in `probe`."""
    backend = get_backend("device_timer")
    starts = []

    def host_ring(slots, batch, graph_records):
        starts.append(slots)
        if _native.device_timer.device_timer_running():
            _native.device_timer.device_timer_free()
        _native.testing.device_timer_host_ring(slots, batch, 0, graph_records=graph_records)
        _native.device_timer.device_timer_set_clock(200_000)
        return {"offset_ns": 200_000, "uncertainty_ns": 10, "realtime_minus_probe_ns": 0}

    probe = [300_000]
    monkeypatch.setattr(_native.device_timer, "device_timer_check_clock",
                        lambda: {"offset_ns": probe[0], "uncertainty_ns": 20, "realtime_minus_probe_ns": 0})
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setattr(backend, "start_ring", host_ring)
    monkeypatch.setattr(backend, "clock", ring_clock.RingClock())
    corex_triton.install(monkeypatch, compiled_kernels.StandinDriver)
    name = _native.device_timer.device_timer_name_kernel("add_kernel")

    stamps = []

    def device(slot, grid, binary):
        if slot:
            stamps.append(_native.core.monotonic_ns() + TRUE_OFFSET)
            _native.testing.device_timer_host_meta(slot, name, grid, 256)
            _native.testing.device_timer_host_stamp(slot, 0, stamps[-1], stamps[-1] + 5_000)

    monkeypatch.setattr(compiled_kernels.StandinDriver, "device", device)
    source = ASTSource(JITFunction(add_kernel), dict(compiled_kernels.SIGNATURE), {"BLOCK": 1024})
    kernel = compiled_kernels.compiled_kernel(str(tmp_path / "cache"), source)
    yield lambda: kernel.run(1, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None, 1, 2, 3, 4), \
        starts, probe, stamps
    if _native.device_timer.device_timer_running():
        _native.device_timer.device_timer_free()


def _session(tmp_path, name, run):
    profiler.start(str(tmp_path / name), backend="device_timer", data="trace")
    run()
    profiler.finalize()
    trace = json.loads((tmp_path / f"{name}.chrome_trace").read_text())
    (event,) = [e for e in trace["traceEvents"] if e.get("name") == "add_kernel"]
    meta = trace["otherData"]
    assert "device_clock_shift_ns" not in meta  # no kernel placed before its launch call
    return meta, round(event["ts"] * 1000) + meta["trace_origin_monotonic_ns"]  # where it was placed


def test_back_to_back_sessions_place_records_with_the_previous_finalize_offset(tmp_path, launch):
    run, starts, probe, stamps = launch
    first, placed = _session(tmp_path, "a", run)
    assert first["device_timer_clock_probe_age_ns"] == 0 and first["device_timer_clock_offset_ns"] == 200_000
    assert first["device_timer_clock_drift_ns"] == 100_000 and placed == stamps[-1] - 200_000
    probe[0] = 300_050
    second, placed = _session(tmp_path, "b", run)
    assert len(starts) == 1  # the second start probed nothing and kept the ring
    assert second["device_timer_clock_offset_ns"] == 300_000 and second["device_timer_clock_drift_ns"] == 50
    assert 0 < second["device_timer_clock_probe_age_ns"] < ring_clock.REUSE_NS
    assert placed == stamps[-1] - 300_000  # the record went through the offset set at start
    get_backend("device_timer").free()  # the ring goes: the next start probes
    _session(tmp_path, "c", run)
    assert len(starts) == 2
