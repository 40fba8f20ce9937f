"""Every launch of a compiled Triton kernel in a device_timer session is timed or counted, whatever
launched it: a CompiledKernel a library holds (called through ``kernel.run`` as FlagGems' LibEntry
does, or ``kernel[grid]``), a kernel compiled before the session, torch inductor's launchers run by
its CachingAutotuner. Real CompiledKernel objects (Triton's constructor, from a metadata group as
Triton's cache keeps it) and real inductor launchers and autotuners, on a stand-in target whose
launcher asks Triton's profile allocator as a device's does; the ring on the host."""
import json

import pytest
import triton
import triton.language as tl
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from flagtree.profiler.backends.device_timer import untimed
from standins import compiled_kernels, corex_triton
from support.profiles import metrics_by_path

T = _native.testing
TAG = _native.device_timer_layout()["align_tag"]


def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


def _host_ring(slots, batch, graph_records):
    T.device_timer_host_ring(slots, batch, 0, graph_records=graph_records)
    return {"offset_ns": 0, "uncertainty_ns": 0, "realtime_minus_probe_ns": 0}


@pytest.fixture
def target(monkeypatch):
    """The stand-in target active and the device_timer ring on the host, undone after."""
    monkeypatch.setattr(get_backend("device_timer"), "start_ring", _host_ring)
    corex_triton.install(monkeypatch, compiled_kernels.StandinDriver)
    yield
    if _native.device_timer_running():
        _native.device_timer_free()


def _source():
    return ASTSource(JITFunction(add_kernel), dict(compiled_kernels.SIGNATURE), {"BLOCK": 1024})


def _device(duration_ns):
    """What a launch runs: a stamped kernel's blocks stamp the slot its launcher got."""
    clock = {"now": 1_000_000}

    def run(slot, grid):
        if slot:
            T.device_timer_host_meta(slot, _native.device_timer_name_kernel("add_kernel"), grid, 256)
            T.device_timer_host_stamp(slot, 0, clock["now"], clock["now"] + duration_ns)
        clock["now"] += 10 * duration_ns

    return run


def _launch(kernel, times):
    for _ in range(times):  # as FlagGems' LibEntry launches the kernel it keeps
        kernel.run(1, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None, 1, 2, 3, 4)


def _meta(tmp_path):
    return json.load(open(tmp_path / "p.meta.json"))


def test_a_library_held_kernel_compiled_before_the_session_is_counted_and_warned_about_once(tmp_path, target):
    kernel = compiled_kernels.compiled_kernel(str(tmp_path / "cache"), _source(), _device(0))
    run_before = type(kernel).__dict__["run"]
    _launch(kernel, 2)  # before the session: nothing counts
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    _launch(kernel, 3)
    kernel[(2, 1, 1)](1, 2, 3, 4, stream=0)
    with pytest.warns(RuntimeWarning, match=r"4 launches of 1 Triton kernels got no device time: add_kernel \(4\)") as caught:
        profiler.finalize(sid)
    assert len([w for w in caught if "got no device time" in str(w.message)]) == 1
    assert len(kernel._run.calls) == 6  # every launch still ran
    meta = _meta(tmp_path)
    assert meta["device_timer_launches_not_timed"] == 4
    assert meta["device_timer_not_timed_kernels"] == {"add_kernel": {"launches": 4, "reason": untimed.NOT_STAMPED}}
    assert "CompiledKernel.run" in meta["device_timer_launch_doors"]
    # The session is over: Triton's own property is back and the kernel keeps nothing of ours.
    assert type(kernel).__dict__["run"] is run_before and "_flagtree_launcher" not in kernel.__dict__


def test_a_library_held_stamped_kernel_is_timed_by_the_ring_and_not_counted(tmp_path, target):
    kernel = compiled_kernels.compiled_kernel(str(tmp_path / "cache"), _source(), _device(25_000),
                                              scratch=(16, TAG))
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    with profiler.scope("step"):
        _launch(kernel, 2)
    profiler.finalize(sid)
    node = metrics_by_path(tmp_path / "p.hatchet")[("step", "add_kernel")]
    assert node["count"] == 2 and node["time (ns)"] == 50_000
    meta = _meta(tmp_path)
    assert meta["device_timer_launches_not_timed"] == 0 and meta["device_timer_not_timed_kernels"] == {}


def test_a_second_session_counts_only_its_own_launches(tmp_path, target):
    kernel = compiled_kernels.compiled_kernel(str(tmp_path / "cache"), _source(), _device(0))
    first = profiler.start(str(tmp_path / "a"), backend="device_timer")
    _launch(kernel, 5)
    second = profiler.start(str(tmp_path / "p"), backend="device_timer")
    _launch(kernel, 2)
    with pytest.warns(RuntimeWarning, match="got no device time"):
        profiler.finalize(second)
    with pytest.warns(RuntimeWarning, match="got no device time"):
        profiler.finalize(first)
    assert _meta(tmp_path)["device_timer_launches_not_timed"] == 2
    assert json.load(open(tmp_path / "a.meta.json"))["device_timer_launches_not_timed"] == 7


def _inductor_autotuner(kernel):
    """A real inductor launcher (TritonCompileResult.make_launcher, which captures the kernel's
    launcher when it is made) run by a real CachingAutotuner, both made before the session."""
    from torch._inductor.runtime import triton_heuristics as heuristics
    from torch._inductor.runtime.hints import DeviceProperties
    import torch

    grid = heuristics.FixedGrid.setup_grid_as_args()
    config = triton.Config({"BLOCK": 1024}, num_warps=4)
    meta = {"device": DeviceProperties.create(torch.device("cpu")), "device_type": "cuda",
            "signature": dict(compiled_kernels.SIGNATURE), "constants": {}}
    launcher = heuristics.TritonCompileResult(kernel, config, meta, grid).make_launcher()
    tuner = heuristics.CachingAutotuner(kernel.src.fn, meta, [config], None, [], False, None, inductor_meta=grid)
    tuner.launchers = [launcher]
    return tuner


def _run_tuner(tuner, times):
    for _ in range(times):  # x, y, out, n, BLOCK, then the fixed grid
        tuner.run(1, 2, 3, 4, 1024, 2, 1, 1, stream=0)


def test_inductor_launchers_made_before_the_session_are_counted(tmp_path, target):
    kernel = compiled_kernels.compiled_kernel(str(tmp_path / "cache"), _source(), _device(0))
    tuner = _inductor_autotuner(kernel)
    _run_tuner(tuner, 2)  # warm, its fast path cached before the session
    original = tuner.launchers[0]
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    _run_tuner(tuner, 3)
    with pytest.warns(RuntimeWarning, match="3 launches"):
        profiler.finalize(sid)
    assert len(kernel._run.calls) == 5
    meta = _meta(tmp_path)
    assert meta["device_timer_not_timed_kernels"] == {"add_kernel": {"launches": 3, "reason": untimed.NOT_STAMPED}}
    assert "CachingAutotuner.run" in meta["device_timer_launch_doors"]
    assert tuner.launchers == [original] and "run" not in tuner.__dict__  # given back as found
    _run_tuner(tuner, 1)
    assert len(kernel._run.calls) == 6


def test_inductor_launchers_of_a_stamped_kernel_are_timed(tmp_path, target):
    kernel = compiled_kernels.compiled_kernel(str(tmp_path / "cache"), _source(), _device(7_000),
                                              scratch=(16, TAG))
    tuner = _inductor_autotuner(kernel)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    with profiler.scope("compiled"):
        _run_tuner(tuner, 4)
    profiler.finalize(sid)
    node = metrics_by_path(tmp_path / "p.hatchet")[("compiled", "add_kernel")]
    assert node["count"] == 4 and node["time (ns)"] == 28_000
    assert _meta(tmp_path)["device_timer_launches_not_timed"] == 0
