"""Records stamped on no clock the tracer converts (CUPTI's kernel-replay records of the counters
route: 0, or another clock) land on the profile's clock: each at its launch call, its duration
kept, counted in the metadata; no shift of the whole trace, no warning. On the CPU, against the
libcupti stand-in, whose stamps are CLOCK_REALTIME as CUPTI's are on Linux."""
import warnings

import pytest

import flagtree.profiler as profiler
from backends.test_cupti_attach import nvidia_on_standin, standin, trace_events  # noqa: F401 (fixtures)
from vendor_outputs import kernels, load_meta, load_tree

# which clock the stand-in stamps records on: (its number, the duration it gives in us)
OFF_CLOCKS = {"zero": (1, 0.0), "monotonic": (2, 5.0)}


@pytest.fixture
def off_clock(standin, request):
    yield
    standin.standin_record_clock(0)


@pytest.mark.parametrize("clock", sorted(OFF_CLOCKS))
def test_records_off_cuptis_clock_start_at_their_launch_calls(standin, tmp_path, off_clock, clock):
    which, duration_us = OFF_CLOCKS[clock]
    standin.standin_record_clock(which)
    base = tmp_path / "replayed"
    profiler.start(name=str(base), backend="nvidia", data="trace")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            standin.standin_launch()
        profiler.finalize()
    meta = load_meta(base)
    assert meta["records_placed_at_launch"] == 3 and meta["kernel_records"] == 3
    assert "device_clock_shift_ns" not in meta
    assert not [w for w in caught if "clock is off" in str(w.message)]
    found, launches = trace_events(base)
    assert len(found) == 3 and len(launches) == 3
    for kernel, launch in zip(sorted(found, key=lambda e: e["ts"]), sorted(launches, key=lambda e: e["ts"])):
        assert 0 <= kernel["ts"] - launch["ts"] < 1e6  # us: after its call, within a second
        assert kernel["dur"] == pytest.approx(duration_us)


def test_records_on_cuptis_clock_are_converted_not_placed(standin, tmp_path):
    base = tmp_path / "realtime"
    profiler.start(name=str(base), backend="nvidia", data="tree")
    for _ in range(2):
        standin.standin_launch()
    profiler.finalize()
    meta = load_meta(base)
    assert "records_placed_at_launch" not in meta and "device_clock_shift_ns" not in meta
    root, _ = load_tree(base)
    ((_, node),) = list(kernels(root))
    assert node["metrics"]["time (ns)"] == 2 * 5000
