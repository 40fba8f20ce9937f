"""hook="triton": what launch_metadata returns that a kernel node cannot hold is dropped with a
warning, and the profile stays strict JSON: a metric the tree writes itself on every kernel node
(count, time (ns), device_id, device_type), and a name or metric name that is not UTF-8 text."""
import warnings

import pytest
import triton
import triton.language as tl

import flagtree.profiler as profiler
from support.json_check import load_strict
from support.kernels import tensors
from support.triton_needs import needs_interpreter_metadata

RETURNED = {}


def _metadata(grid, kernel, args):
    return dict(RETURNED)


@triton.jit(launch_metadata=_metadata)
def keyed_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()
    RETURNED.clear()


def _run(tmp_path, returned, launches=2):
    RETURNED.update(returned)
    x, _, _ = tensors()
    profiler.start(str(tmp_path / "k"), hook="triton", data="tree,trace")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(launches):
            keyed_kernel[(1,)](x, 64, BLOCK=64)
    profiler.finalize()
    load_strict(tmp_path / "k.chrome_trace")
    (kernel,) = load_strict(tmp_path / "k.hatchet")[0]["children"]
    return kernel, [str(w.message) for w in caught if "flagtree.profiler" in str(w.message)]


@needs_interpreter_metadata
def test_metrics_the_tree_writes_itself_are_dropped_not_written_twice(tmp_path):
    kernel, said = _run(tmp_path, {"count": 5, "time (ns)": 7, "device_id": 3, "device_type": 9, "bytes": 8})
    metrics = kernel["metrics"]
    assert metrics["count"] == 2 and metrics["bytes"] == 16.0 and metrics["device_id"] == 0
    assert metrics["time (ns)"] > 7 and metrics["device_type"] == 2
    assert len(said) == 1 and "a metric name the profiler writes itself" in said[0], said


@needs_interpreter_metadata
def test_a_name_or_metric_name_that_is_not_utf8_is_dropped_and_the_rest_kept(tmp_path):
    kernel, said = _run(tmp_path, {"name": "\ud800", "\udcff": 1, "bytes": 4})
    assert kernel["frame"]["name"] == "keyed_kernel"
    assert kernel["metrics"]["count"] == 2 and kernel["metrics"]["bytes"] == 8.0
    assert not any("hook failed" in message for message in said), said
    assert any("'name'" in message and "not finite numbers" in message for message in said), said
    assert any("'\\udcff'" in message and "not UTF-8 text" in message for message in said), said
