"""What the mthreads (MUPTI) and cann (MSPTI) backends share, tested once over both: the one native
CUPTI-dialect tracer, driven through each vendor's stand-in library (tests/backends/conftest.py)
the way that vendor's launches reach it (mthreads: MUPTI's launch callbacks; cann: Triton's launch
hook around rtKernelLaunch, joined through MSPTI's external correlation records). Where the
vendors behave differently the tests are in test_mthreads.py and test_cann.py."""
import json
import os
import threading
import warnings

import pytest

import flagtree.profiler as profiler
from support.threads import run_threads
from triton_launch import triton_launch
from vendor_outputs import find, kernels, load_meta, load_tree, viewer_values


class Vendor:
    """One backend and its stand-in: how to launch, what its counters are called."""

    def __init__(self, backend, lib, variable, device_type, unknown_time, unknown_time_counter, conflict):
        self.backend, self.lib, self.variable, self.device_type = backend, lib, variable, device_type
        self._unknown_time, self.unknown_time_counter, self.conflict = unknown_time, unknown_time_counter, conflict

    def launch(self, kernel, ns=1000, stream=3):
        if self.backend == "cann":
            return triton_launch(self.lib, kernel, stream=stream, ns=ns)
        dims = self.lib.dims
        return self.lib.standin_launch(kernel.encode(), dims(1, 1, 1), dims(64, 1, 1), 0, stream, ns)

    def unknown_time_next(self, n):
        self._unknown_time(n)

    def start(self, base, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cann's once-only LD_PRELOAD notice (test_cann.py)
            return profiler.start(name=str(base), backend=self.backend, **kwargs)

    @property
    def prefix(self):
        return "mspti" if self.backend == "cann" else "mupti"


@pytest.fixture(params=["mthreads", "cann"])
def vendor(request, monkeypatch):
    if request.param == "cann":
        lib = request.getfixturevalue("mspti_lib")
        monkeypatch.delenv("LD_PRELOAD", raising=False)
        monkeypatch.delenv("PROFILING_MODE", raising=False)
        v = Vendor("cann", lib, "FLAGTREE_PROFILER_MSPTI_PATH", 3, lib.standin_unknown_time_next,
                   "unknown_timestamp_records", "msprof, torch_npu's profiler")
    else:
        lib = request.getfixturevalue("mupti_lib")
        v = Vendor("mthreads", lib, "FLAGTREE_PROFILER_MUPTI_PATH", 4, lib.standin_zero_next,
                   "zero_timestamp_records", "torch_musa's profiler")
    monkeypatch.setenv(v.variable, lib.path)
    yield v
    profiler.finalize()
    v.unknown_time_next(0)
    lib.standin_drop_next(0)
    lib.standin_hold_subscriber(0)
    assert lib.standin_state(0) == 0  # nothing left subscribed


def test_kernels_land_under_the_scopes_and_states_that_launched_them(vendor, tmp_path):
    base = tmp_path / "p"
    vendor.start(base)
    with profiler.scope("model"):
        with profiler.scope("attn"):
            for _ in range(3):
                vendor.launch("add_kernel", ns=5000)
            with profiler.state("fwd"):
                vendor.launch("softmax_kernel", ns=700)
    profiler.finalize()
    root, _ = load_tree(base)
    assert [c["frame"]["name"] for c in root["children"]] == ["model"]
    add = find(root, "model", "attn", "add_kernel")
    assert (add["metrics"]["count"], add["metrics"]["time (ns)"]) == (3, 15000)
    assert add["metrics"]["device_type"] == vendor.device_type
    assert find(root, "model", "attn", "fwd", "softmax_kernel")["metrics"]["time (ns)"] == 700
    meta = load_meta(base)
    assert meta["backend"] == vendor.backend and meta[f"{vendor.prefix}_library"] == vendor.lib.path
    assert (meta["kernel_records"], meta["lost_launches"], meta["unattributed_records"]) == (4, 0, 0)


def test_exact_counts_over_10000_launches_on_8_threads(vendor, tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_BUFFER_SIZE", "16384")  # many buffers complete
    base = tmp_path / "many"
    vendor.start(base)
    barrier = threading.Barrier(8)

    def worker(index):
        barrier.wait()
        with profiler.scope(f"thread{index}"):
            for _ in range(1250):
                vendor.launch("add_kernel", stream=index, ns=10 + index)

    run_threads(worker, range(8))
    profiler.finalize()
    root, _ = load_tree(base)
    assert sorted(c["frame"]["name"] for c in root["children"]) == [f"thread{i}" for i in range(8)]
    for i in range(8):
        node = find(root, f"thread{i}", "add_kernel")
        assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (1250, 1250 * (10 + i))
    meta = load_meta(base)
    assert (meta["kernel_records"], meta["lost_launches"], meta["dropped_records"]) == (10000, 0, 0)


def launch_from_here(vendor):
    return vendor.launch("py_kernel", ns=1234)


def test_python_context_names_this_file(vendor, tmp_path):
    base = tmp_path / "py"
    vendor.start(base, context="python")
    for _ in range(2):
        launch_from_here(vendor)
    profiler.finalize()
    (path, node), = kernels(load_tree(base)[0])
    assert (node["metrics"]["count"], node["metrics"]["time (ns)"]) == (2, 2468)
    assert any(os.path.basename(__file__) in f and f.endswith("@launch_from_here") for f in path[:-1]), path


def test_records_without_a_known_time_are_discarded_and_counted(vendor, tmp_path):
    from flagtree.profiler import _native

    base = tmp_path / "z"
    before = dict(getattr(getattr(_native, vendor.backend), f"{vendor.prefix}_stats")())
    vendor.start(base)
    vendor.unknown_time_next(3)
    for _ in range(10):
        vendor.launch("softmax_kernel", ns=100)
    with pytest.warns(UserWarning, match="3 kernel records were lost"):
        profiler.finalize()
    assert find(load_tree(base)[0], "softmax_kernel")["metrics"]["count"] == 7
    after = dict(getattr(getattr(_native, vendor.backend), f"{vendor.prefix}_stats")())
    assert after[vendor.unknown_time_counter] - before[vendor.unknown_time_counter] == 3
    meta = load_meta(base)
    assert (meta["kernel_records"], meta["lost_launches"]) == (7, 3)


def test_records_of_deactivated_launches_stay_out(vendor, tmp_path):
    base = tmp_path / "off"
    sid = vendor.start(base)
    vendor.launch("add_kernel")
    profiler.deactivate(sid)
    vendor.launch("softmax_kernel")
    profiler.activate(sid)
    profiler.finalize()
    root, _ = load_tree(base)
    assert [c["frame"]["name"] for c in root["children"]] == ["add_kernel"]
    assert load_meta(base)["unattributed_records"] == 0


def test_another_subscriber_is_a_clear_error_and_the_program_goes_on(vendor, tmp_path):
    vendor.lib.standin_hold_subscriber(1)
    with pytest.raises(RuntimeError, match=vendor.conflict) as info:
        vendor.start(tmp_path / "busy")
    assert "MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" in str(info.value) and vendor.lib.path in str(info.value)
    assert profiler.session.open_sessions() == [] and vendor.lib.standin_state(0) == 0
    vendor.lib.standin_hold_subscriber(0)
    vendor.start(tmp_path / "after")
    vendor.launch("add_kernel")
    profiler.finalize()
    assert find(load_tree(tmp_path / "after")[0], "add_kernel")["metrics"]["count"] == 1


def test_outputs_read_by_viewer_and_hatchet(vendor, tmp_path):
    hatchet = pytest.importorskip("hatchet")
    base = tmp_path / "v"
    vendor.start(base)
    with profiler.scope("step"):
        vendor.launch("add_kernel", ns=2000)
    profiler.finalize()
    path = str(base) + ".hatchet"
    assert viewer_values(path, "time/ns", "add_kernel") == [2000]
    with open(path) as f:
        data = json.load(f)
    assert {"ROOT", "step", "add_kernel"} <= set(hatchet.GraphFrame.from_literal([data[0]]).dataframe["name"])
