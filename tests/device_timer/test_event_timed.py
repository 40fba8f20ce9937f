"""Launches of compiled Triton kernels that cannot be stamped are timed with two events on the
launch's stream (backends/device_timer/event_timed.py, csrc/backends/device_timer/event_launches.cpp):
one record per launch under the launch's context, built at a drain. Real CompiledKernel objects
and inductor launchers on the stand-in target of test_launch_sight.py; the ring and its events on
the host stand-in (an event keeps the host time at its record, or the test's clock, which the
stand-in device moves by a launch's duration)."""
import json
import time

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends.device_timer import event_timed, parse_mode, untimed
from support.profiles import metrics_by_path
from test_launch_sight import (COUNTED, Device, _inductor_autotuner, _kernel, _launch, _launch_captured, _meta,
                               _run_tuner, _tree)
from test_launch_sight import device  # noqa: F401 (the stand-in target's fixture, used by timed)

TIMED = "events=on"  # launches that cannot be stamped timed by events (off by default)

T = _native.testing
CLOCK_AT = 5_000_000_000


class TimedDevice(Device):
    """The stand-in device whose launches of unstamped binaries take `duration_ns` on the
    events' clock."""

    def __call__(self, slot, grid, binary):
        super().__call__(slot, grid, binary)
        T.device_timer_host_event_advance(self.duration)


@pytest.fixture
def timed(device, monkeypatch):
    """The stand-in target with a device whose launches move the events' clock (set to CLOCK_AT)."""
    from standins import compiled_kernels

    timed = TimedDevice(duration_ns=7_000)
    monkeypatch.setattr(compiled_kernels.StandinDriver, "device", timed)
    T.device_timer_host_event_clock(CLOCK_AT)
    yield timed
    T.device_timer_host_event_clock(0)


def test_a_kernel_that_cannot_be_stamped_is_timed_by_events_under_its_context(tmp_path, timed):
    kernel = _kernel(tmp_path, stages=())  # only its binary is kept: no code to stamp
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=TIMED)
    with profiler.scope("step"):
        _launch(kernel, 3)
        kernel[(2, 1, 1)](1, 2, 3, 4, stream=0)
    with pytest.warns(RuntimeWarning, match=r"4 launches of 1 Triton kernels were timed with CUDA events") as caught:
        profiler.finalize(sid)
    assert not [w for w in caught if "got no device time" in str(w.message)]
    node = _tree(tmp_path)[("step", "add_kernel")]
    assert node["count"] == 4 and node["time (ns)"] == 4 * timed.duration
    assert len(timed.ran) == 4 and timed.stamped_runs() == 0  # the kernel's own binary ran
    meta = _meta(tmp_path)
    timed = meta["device_timer_event_timed_kernels"]["add_kernel"]
    assert timed["launches"] == 4 and timed["reason"].startswith(untimed.NOT_RESTAMPED)
    assert meta["device_timer_not_timed_kernels"] == {} and meta["device_timer_launches_not_timed"] == 0
    assert meta["device_timer_events"] == "on" and meta["device_timer_event_records"] == 4
    assert meta["device_timer_event_launches_timed"] == 4 and meta["device_timer_event_untimed"] == 0


def test_event_timed_records_lie_inside_the_host_scope_that_launched_them(tmp_path, timed):
    T.device_timer_host_event_clock(0)  # events keep host monotonic times
    kernel = _kernel(tmp_path, stages=())
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", data="trace", mode=TIMED)
    before = time.monotonic_ns()
    with profiler.scope("step"):
        kernel[(2, 3, 1)](1, 2, 3, 4, stream=0)
    after = time.monotonic_ns()
    with pytest.warns(RuntimeWarning, match="timed with CUDA events"):
        profiler.finalize(sid)
    trace = json.loads((tmp_path / "p.chrome_trace").read_text())
    event = next(e for e in trace["traceEvents"] if e["name"] == "add_kernel" and e["cat"] == "kernel")
    start = event["ts"] * 1000 + trace["otherData"]["trace_origin_monotonic_ns"]
    assert before <= start <= start + event["dur"] * 1000 <= after
    assert event["args"]["grid"] == [2, 3, 1] and event["args"]["context"].split("/")[-1] == "step"
    assert int(event["args"]["correlation"]) >> 28 == 0xB  # the event-timed launches' own range


def test_launches_on_a_capturing_stream_record_no_events_and_stay_counted(tmp_path, timed):
    kernel = _kernel(tmp_path, stages=())
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=TIMED)
    _launch(kernel, 2)
    _launch_captured(kernel, 3)
    with pytest.warns(RuntimeWarning) as caught:
        profiler.finalize(sid)
    texts = [str(w.message) for w in caught]
    assert any("3 launches of 1 Triton kernels got no device time" in t for t in texts)
    assert any("2 launches of 1 Triton kernels were timed with CUDA events" in t for t in texts)
    assert _tree(tmp_path)[("add_kernel",)]["count"] == 2 and len(timed.ran) == 5
    meta = _meta(tmp_path)
    assert meta["device_timer_event_timed_kernels"]["add_kernel"]["launches"] == 2
    counted = meta["device_timer_not_timed_kernels"]["add_kernel"]
    assert counted["launches"] == 3 and event_timed.CAPTURED in counted["reason"]
    assert meta["device_timer_launches_not_timed"] == 3 and meta["device_timer_event_captured_untimed"] == 3


def test_a_full_pool_waits_for_a_drain_and_drops_nothing(tmp_path, timed, monkeypatch):
    monkeypatch.setattr(event_timed, "EVENT_PAIRS", 2)
    kernel = _kernel(tmp_path, stages=())
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=TIMED)
    _launch(kernel, 5)
    waits = T.device_timer_host_event_waits()
    with pytest.warns(RuntimeWarning, match="timed with CUDA events"):
        profiler.finalize(sid)
    assert _tree(tmp_path)[("add_kernel",)]["count"] == 5
    assert _tree(tmp_path)[("add_kernel",)]["time (ns)"] == 5 * timed.duration
    meta = _meta(tmp_path)
    assert meta["device_timer_event_pool_waits"] == 2 and meta["device_timer_event_records"] == 5
    assert waits >= 4  # the two full pools' launches were waited for on the launching thread


def test_inductor_launchers_of_a_kernel_that_cannot_be_stamped_are_timed_by_events(tmp_path, timed):
    kernel = _kernel(tmp_path, stages=())
    tuner = _inductor_autotuner(kernel)
    original = tuner.launchers[0]
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=TIMED)
    with profiler.scope("compiled"):
        _run_tuner(tuner, 3)  # the stream as inductor passes it: a keyword
    with pytest.warns(RuntimeWarning, match="3 launches of 1 Triton kernels were timed with CUDA events"):
        profiler.finalize(sid)
    node = _tree(tmp_path)[("compiled", "add_kernel")]
    assert node["count"] == 3 and node["time (ns)"] == 3 * timed.duration
    assert tuner.launchers == [original]  # given back as found


def test_events_are_off_by_default_launches_counted_and_only_events_on_is_named(tmp_path, timed):
    assert parse_mode(None).canonical() == "slots=16384:batch=1024:graph_replays=256:scopes=on"
    assert parse_mode(COUNTED).canonical() == parse_mode(None).canonical()
    assert parse_mode("slots=64:events=on").canonical() == "slots=64:batch=4:graph_replays=256:scopes=on:events=on"
    kernel = _kernel(tmp_path, stages=())
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")  # events off: the default
    _launch(kernel, 2)
    with pytest.warns(RuntimeWarning, match="2 launches of 1 Triton kernels got no device time"):
        profiler.finalize(sid)
    meta = _meta(tmp_path)
    assert meta["device_timer_events"] == "off" and meta["device_timer_event_timed_kernels"] == {}
    assert "events" not in meta["device_timer_options"]
    assert ("add_kernel",) not in _tree(tmp_path)


def test_a_launch_that_raises_leaves_no_record_and_is_counted(tmp_path, timed, monkeypatch):
    from standins import compiled_kernels

    kernel = _kernel(tmp_path, stages=())
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=TIMED)
    _launch(kernel, 1)

    def refuse(slot, grid, binary):
        raise RuntimeError("launch refused")

    monkeypatch.setattr(compiled_kernels.StandinDriver, "device", refuse)
    with pytest.raises(RuntimeError, match="launch refused"):
        _launch(kernel, 1)
    with pytest.warns(RuntimeWarning):
        profiler.finalize(sid)
    meta = _meta(tmp_path)
    assert _tree(tmp_path)[("add_kernel",)]["count"] == 1
    assert meta["device_timer_event_timed_kernels"]["add_kernel"]["launches"] == 1
    assert meta["device_timer_not_timed_kernels"]["add_kernel"]["launches"] == 1
    assert meta["device_timer_event_untimed"] == 1


def test_with_hook_triton_the_launch_is_announced_after_it_and_keeps_its_record(tmp_path, timed):
    kernel = _kernel(tmp_path, stages=())
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", hook="triton", mode=TIMED)
    with profiler.scope("step"):
        _launch(kernel, 2)  # the stand-in's launcher runs no exit hook: announced after the call
    with pytest.warns(RuntimeWarning, match="timed with CUDA events"):
        profiler.finalize(sid)
    node = _tree(tmp_path)[("step", "add_kernel")]
    assert node["count"] == 2 and node["time (ns)"] == 2 * timed.duration


def test_a_second_open_session_takes_only_its_own_event_timed_launches(tmp_path, timed):
    kernel = _kernel(tmp_path, stages=())
    first = profiler.start(str(tmp_path / "a"), backend="device_timer", mode=TIMED)
    _launch(kernel, 3)
    second = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=TIMED)
    _launch(kernel, 2)
    with pytest.warns(RuntimeWarning, match="2 launches of 1 Triton kernels were timed with CUDA events"):
        profiler.finalize(second)
    with pytest.warns(RuntimeWarning, match="5 launches of 1 Triton kernels were timed with CUDA events"):
        profiler.finalize(first)
    assert _tree(tmp_path)[("add_kernel",)]["count"] == 2
    assert metrics_by_path(tmp_path / "a.hatchet")[("add_kernel",)]["count"] == 5
    assert _meta(tmp_path)["device_timer_event_timed_kernels"]["add_kernel"]["launches"] == 2
    assert _meta(tmp_path, "a")["device_timer_event_timed_kernels"]["add_kernel"]["launches"] == 5


def test_warnings_name_the_busiest_kernels_first_and_count_the_rest():
    kernels = {f"k{n}": {"launches": n} for n in range(1, 8)}
    spell = lambda name, entry: f"{name} ({entry['launches']})"  # noqa: E731
    assert event_timed.busiest(kernels, 3, ", ", spell) == "k7 (7), k6 (6), k5 (5), and 4 more"
    assert event_timed.busiest(kernels, 7, "; ", spell).endswith("k1 (1)")
