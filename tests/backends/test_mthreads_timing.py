"""Where the mthreads backend's kernel times come from, through the stand-in libmupti.so: MUPTI's
records with their clock mapped by a line through samples at start and at each flush, and records
without timestamps (a forced flush can hand over kernels it has no time for) timed by their
launch callbacks on the host, counted and said so."""
import json
import time

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from vendor_outputs import find, load_meta, load_tree


@pytest.fixture(autouse=True)
def mupti_env(mupti_lib, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_MUPTI_PATH", mupti_lib.path)
    yield
    profiler.finalize()
    mupti_lib.standin_zero_next(0)
    mupti_lib.standin_clock_rate_ppm(0)


def launch(lib, kernel, ns):
    return lib.standin_launch(kernel.encode(), lib.dims(1, 1, 1), lib.dims(64, 1, 1), 0, 7, ns)


def test_records_without_timestamps_take_their_launch_calls_host_times(mupti_lib, tmp_path):
    base = tmp_path / "untimed"
    before = dict(_native.mthreads.mupti_stats())
    profiler.start(str(base), backend="mthreads")
    mupti_lib.standin_zero_next(2)
    with profiler.scope("step"):
        for _ in range(3):
            launch(mupti_lib, "add_kernel", ns=5000)
    profiler.finalize()
    add = find(load_tree(base)[0], "step", "add_kernel")["metrics"]
    assert add["count"] == 3 and add["time (ns)"] > 5000  # one device time, two host call spans
    after = dict(_native.mthreads.mupti_stats())
    assert after["callback_timed_records"] - before["callback_timed_records"] == 2
    assert after["zero_timestamp_records"] == before["zero_timestamp_records"]
    meta = load_meta(base)
    assert meta["lost_launches"] == 0 and "host times" in meta["kernel_times"]


def test_a_vendor_clock_at_another_rate_is_fitted_not_offset(mupti_lib, tmp_path):
    # 5,000 ppm: 1 ms off after 200 ms with the start's offset alone; the line through the start's
    # and the flush's samples puts the kernel inside the scope that launched it.
    mupti_lib.standin_clock_rate_ppm(5000)
    base = tmp_path / "fit"
    profiler.start(str(base), backend="mthreads", data="trace")
    time.sleep(0.2)
    with profiler.scope("host_scope"):
        launch(mupti_lib, "add_kernel", ns=2000)
    profiler.finalize()
    events = json.load(open(str(base) + ".chrome_trace"))["traceEvents"]
    scope = next(e for e in events if e.get("name") == "host_scope" and e.get("ph") == "X")
    kernel = next(e for e in events if e.get("name") == "add_kernel" and e.get("ph") == "X")
    assert scope["ts"] <= kernel["ts"] <= scope["ts"] + scope["dur"], (scope, kernel)
    assert kernel["dur"] == pytest.approx(2.0, abs=0.05)
