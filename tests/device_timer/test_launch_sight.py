"""Every launch of a compiled Triton kernel in a device_timer session is timed or counted, whatever
launched it: a CompiledKernel a library holds (called through ``kernel.run`` as FlagGems' LibEntry
does, or ``kernel[grid]``), a kernel compiled before the session, torch inductor's launchers run by
its CachingAutotuner. A kernel without stamps is stamped at its first launch from the code Triton
keeps of it, or, where that cannot be done, its launches are counted by name with the reason.
Real CompiledKernel objects (Triton's constructor, from a metadata group as Triton's cache keeps
it) and real inductor launchers and autotuners, on a stand-in target (stand-in compiler stages,
binary loader and launcher that asks Triton's profile allocator as a device's does); the ring on
the host."""
import json
import os

import pytest
import triton
import triton.language as tl
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from flagtree.profiler.backends.device_timer import llir_stamps, untimed
from standins import compiled_kernels, corex_triton
from support.profiles import metrics_by_path

T = _native.testing
TAG = _native.device_timer.device_timer_layout()["align_tag"]
COUNTED = "events=off"  # launches that cannot be stamped only counted, as by default (test_event_timed.py: events=on)


def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


def _host_ring(slots, batch, graph_records):
    if _native.device_timer.device_timer_running():  # kept by the session before (the CUDA ring is reused; this one starts anew)
        _native.device_timer.device_timer_free()
    T.device_timer_host_ring(slots, batch, 0, graph_records=graph_records)
    return {"offset_ns": 0, "uncertainty_ns": 0, "realtime_minus_probe_ns": 0}


class Device:
    """What a launch runs: a kernel given a ring slot stamps it (block 0 on lane 0) for
    `duration_ns`; every binary run is kept."""

    def __init__(self, duration_ns=5_000):
        self.duration, self.now, self.ran, self.null_slots = duration_ns, 1_000_000, [], 0

    def __call__(self, slot, grid, binary):
        self.ran.append(binary)
        self.null_slots += not slot
        if slot:
            T.device_timer_host_meta(slot, _native.device_timer.device_timer_name_kernel("add_kernel"), grid, 256)
            T.device_timer_host_stamp(slot, 0, self.now, self.now + self.duration)
        self.now += 10 * self.duration

    def stamped_runs(self):
        return sum(llir_stamps.ENTRY_HELPER.encode() in binary for binary in self.ran)


@pytest.fixture
def device(monkeypatch, tmp_path):
    """The stand-in target active with its device, the device_timer ring on the host and Triton's
    cache in the test's folder, undone after."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setattr(get_backend("device_timer"), "start_ring", _host_ring)
    corex_triton.install(monkeypatch, compiled_kernels.StandinDriver)
    monkeypatch.setattr(compiled_kernels.StandinDriver, "device", Device())
    yield compiled_kernels.StandinDriver.device
    if _native.device_timer.device_timer_running():
        _native.device_timer.device_timer_free()


def _kernel(tmp_path, **kwargs):
    source = ASTSource(JITFunction(add_kernel), dict(compiled_kernels.SIGNATURE), {"BLOCK": 1024})
    return compiled_kernels.compiled_kernel(str(tmp_path / "cache"), source, **kwargs)


def _launch(kernel, times):
    for _ in range(times):  # as FlagGems' LibEntry launches the kernel it keeps
        kernel.run(1, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None, 1, 2, 3, 4)


def _launch_captured(kernel, times):
    """`times` launches while their stream (0, the stand-in launcher's) is being captured."""
    T.device_timer_host_capturing(0, True)
    try:
        _launch(kernel, times)
    finally:
        T.device_timer_host_capturing(0, False)


def _meta(tmp_path, name="p"):
    return json.load(open(tmp_path / f"{name}.meta.json"))


def _tree(tmp_path):
    return metrics_by_path(tmp_path / "p.hatchet")


def test_a_library_held_kernel_compiled_before_the_session_is_stamped_at_its_first_launch(tmp_path, device):
    kernel = _kernel(tmp_path)
    run_before = type(kernel).__dict__["run"]
    _launch(kernel, 2)  # before the session: its own plain binary
    own = dict(kernel.__dict__)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    with profiler.scope("step"):
        _launch(kernel, 3)
        kernel[(2, 1, 1)](1, 2, 3, 4, stream=0)
    during = dict(kernel.__dict__)
    profiler.finalize(sid)
    assert during == own  # the stamped copy is the door's, never written into the kernel
    node = _tree(tmp_path)[("step", "add_kernel")]
    assert node["count"] == 4 and node["time (ns)"] == 4 * device.duration
    assert device.stamped_runs() == 4 and len(device.ran) == 6  # the four in the session ran the stamped copy
    meta = _meta(tmp_path)
    assert meta["device_timer_kernels_stamped_at_first_launch"] == 1
    assert meta["device_timer_launches_not_timed"] == 0 and meta["device_timer_not_timed_kernels"] == {}
    assert "CompiledKernel.run" in meta["device_timer_launch_doors"]
    # The session is over: Triton's own property is back, the kernel keeps nothing of ours and
    # runs its own binary again.
    assert type(kernel).__dict__["run"] is run_before and kernel.__dict__ == own
    _launch(kernel, 1)
    assert device.stamped_runs() == 4


def test_a_later_session_reuses_the_stamped_copy(tmp_path, device):
    kernel = _kernel(tmp_path)
    first = profiler.start(str(tmp_path / "a"), backend="device_timer")
    _launch(kernel, 1)
    profiler.finalize(first)
    loaded = len(compiled_kernels.BINARIES)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    _launch(kernel, 2)
    profiler.finalize(sid)
    assert len(compiled_kernels.BINARIES) == loaded  # nothing built or loaded again
    assert _tree(tmp_path)[("add_kernel",)]["count"] == 2
    assert _meta(tmp_path)["device_timer_kernels_stamped_at_first_launch"] == 0
    assert _meta(tmp_path, "a")["device_timer_kernels_stamped_at_first_launch"] == 1


def test_a_kernel_that_cannot_be_stamped_is_counted_and_warned_about_once(tmp_path, device):
    kernel = _kernel(tmp_path, stages=())  # only its binary is kept: no code to stamp
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=COUNTED)
    _launch(kernel, 3)
    kernel[(2, 1, 1)](1, 2, 3, 4, stream=0)
    with pytest.warns(RuntimeWarning, match=r"4 launches of 1 Triton kernels got no device time: add_kernel \(4\)") as caught:
        profiler.finalize(sid)
    assert len([w for w in caught if "got no device time" in str(w.message)]) == 1
    assert len(device.ran) == 4 and device.stamped_runs() == 0  # every launch still ran
    meta = _meta(tmp_path)
    assert meta["device_timer_launches_not_timed"] == 4
    counted = meta["device_timer_not_timed_kernels"]["add_kernel"]
    assert counted["launches"] == 4 and counted["reason"].startswith(untimed.NOT_RESTAMPED)
    assert "keeps no 'llir' text" in counted["reason"]
    assert ("add_kernel",) not in _tree(tmp_path)


def test_a_second_open_session_counts_only_its_own_launches(tmp_path, device):
    kernel = _kernel(tmp_path, stages=())
    first = profiler.start(str(tmp_path / "a"), backend="device_timer", mode=COUNTED)
    _launch(kernel, 5)
    second = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=COUNTED)
    _launch(kernel, 2)
    with pytest.warns(RuntimeWarning, match="got no device time"):
        profiler.finalize(second)
    with pytest.warns(RuntimeWarning, match="got no device time"):
        profiler.finalize(first)
    assert _meta(tmp_path)["device_timer_launches_not_timed"] == 2
    assert _meta(tmp_path, "a")["device_timer_launches_not_timed"] == 7


def test_a_library_held_stamped_kernel_is_timed_as_it_is(tmp_path, device):
    kernel = _kernel(tmp_path, scratch=(16, TAG))  # compiled with the stamps: its launcher asks for the slot
    loaded = len(compiled_kernels.BINARIES)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    _launch(kernel, 2)
    profiler.finalize(sid)
    assert _tree(tmp_path)[("add_kernel",)]["count"] == 2
    assert len(compiled_kernels.BINARIES) == loaded
    meta = _meta(tmp_path)
    assert meta["device_timer_kernels_stamped_at_first_launch"] == 0 and meta["device_timer_launches_not_timed"] == 0


def test_launches_captured_where_the_stamps_have_no_graph_path_are_counted_and_warned_of(tmp_path, device):
    """The stand-in target's LLVM IR stamps have no graph path, so its ring has no graph area: a
    launch captured into a graph gets a null pointer (its replays write nothing), and the session
    counts it and says why."""
    kernel = _kernel(tmp_path)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    _launch(kernel, 2)
    _launch_captured(kernel, 3)
    with pytest.warns(RuntimeWarning, match="3 launches have no device time .captured into a CUDA graph where the stamps have no graph path"):
        profiler.finalize(sid)
    meta = _meta(tmp_path)
    assert meta["device_timer_captured_untimed"] == 3 and meta["device_timer_graph_nodes"] == 0
    assert _tree(tmp_path)[("add_kernel",)]["count"] == 2 and device.null_slots == 3


@pytest.mark.parametrize("scratch, reason", [
    *[((16, tag), untimed.RETIRED_STAMPS) for tag in _native.device_timer.device_timer_layout()["retired_align_tags"]],
    ((64, 128), untimed.OTHER_SCRATCH)], ids=["stamps-without-the-mark", "leader-ticket-graph-stamps",
                                             "side-by-side-graph-records", "another-instrumentation"])
def test_a_kernel_with_profile_scratch_the_ring_does_not_time_is_counted_with_why(
        tmp_path, device, monkeypatch, scratch, reason):
    """Its launcher asks the profile allocator, but not for a ring slot: the stamps of an earlier
    version get a null pointer, another tool's instrumentation that tool's memory."""
    from triton.runtime import _allocation

    asked = []
    monkeypatch.setattr(_allocation, "_profile_allocator", _allocation._AllocatorWrapper(
        lambda size, alignment, stream: asked.append(alignment) or 4096))  # the other tool's
    kernel = _kernel(tmp_path, scratch=scratch)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=COUNTED)
    _launch(kernel, 3)
    with pytest.warns(RuntimeWarning, match="got no device time"):
        profiler.finalize(sid)
    counted = _meta(tmp_path)["device_timer_not_timed_kernels"]["add_kernel"]
    assert (counted["launches"], counted["reason"]) == (3, reason)
    assert len(device.ran) == 3 and ("add_kernel",) not in _tree(tmp_path)
    assert asked == ([] if reason == untimed.RETIRED_STAMPS else [128] * 3)


@pytest.mark.parametrize("default_scratch", [False, True], ids=["no-default-profile-scratch", "default-profile-scratch"])
def test_a_stamped_kernel_launched_after_its_route_is_taken_down_runs_with_a_null_slot(
        tmp_path, device, monkeypatch, default_scratch):
    from triton.runtime import _allocation

    # Triton 3.5-3.7 raise where no profile allocator is set; 3.8 and later give a default
    # scratch, smaller than the stamps' planes (the stand-in launcher refuses it to stamped kernels)
    if default_scratch:
        monkeypatch.setattr(_allocation, "has_profile_allocator",
                            lambda: type(_allocation._profile_allocator.get()).__name__ != "NullAllocator", raising=False)
    else:
        monkeypatch.delattr(_allocation, "has_profile_allocator", raising=False)
    monkeypatch.setattr(_allocation, "_profile_allocator", _allocation._AllocatorWrapper(_allocation.NullAllocator()))
    kernel = _kernel(tmp_path, scratch=(16, TAG))  # held by a library, as FlagGems' LibEntry holds it
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    _launch(kernel, 1)
    profiler.finalize(sid)  # the route is taken down, the ring kept for a next session
    runs = len(device.ran)
    _launch(kernel, 3)  # after the session, as the library's next call
    get_backend("device_timer").free()  # the ring goes too
    assert not _native.device_timer.device_timer_running()
    _launch(kernel, 2)
    assert len(device.ran) == runs + 5 and device.null_slots == 5
    other = _allocation._profile_allocator.get()  # other requests: answered as Triton would without the route
    if default_scratch:
        asked = []
        monkeypatch.setattr(compiled_kernels.StandinDriver, "allocate_default_profile_scratch",
                            lambda driver, *request: asked.append(request) or 4096, raising=False)
        assert other(16, 8, 0) == 4096 and asked == [(16, 8, 0)]
    else:
        with pytest.raises(RuntimeError, match="no allocator was set"):
            other(16, 8, 0)
    sid = profiler.start(str(tmp_path / "q"), backend="device_timer")  # a later session times it again
    _launch(kernel, 2)
    profiler.finalize(sid)
    assert metrics_by_path(str(tmp_path / "q.hatchet"))[("add_kernel",)]["count"] == 2


def _autotuner_over(kernel, compile_result, compiled):
    """A real CachingAutotuner of `kernel`'s function whose one launcher is
    `compile_result(compiled, ...).make_launcher()` (inductor's launcher of `compiled`), with a
    fixed grid, made before the session."""
    from torch._inductor.runtime import triton_heuristics as heuristics  # noqa: I001 (torch is heavy)
    from torch._inductor.runtime.hints import DeviceProperties
    import torch

    grid = heuristics.FixedGrid.setup_grid_as_args()
    config = triton.Config({"BLOCK": 1024}, num_warps=4)
    meta = {"device": DeviceProperties.create(torch.device("cpu")), "device_type": "cuda",
            "signature": dict(compiled_kernels.SIGNATURE), "constants": {}}
    launcher = compile_result(compiled, config, meta, grid).make_launcher()
    tuner = heuristics.CachingAutotuner(kernel.src.fn, meta, [config], None, [], False, None, inductor_meta=grid)
    tuner.launchers = [launcher]
    return tuner


def _inductor_autotuner(kernel):
    """A real inductor launcher (TritonCompileResult.make_launcher, which captures the kernel's
    launcher and function when it is made) run by a real CachingAutotuner, both made before the
    session."""
    from torch._inductor.runtime import triton_heuristics as heuristics  # noqa: I001 (torch is heavy)

    return _autotuner_over(kernel, heuristics.TritonCompileResult, kernel)


def _run_tuner(tuner, times):
    for _ in range(times):  # x, y, out, n, BLOCK, then the fixed grid
        tuner.run(1, 2, 3, 4, 1024, 2, 1, 1, stream=0)


def test_inductor_launchers_made_before_the_session_are_stamped_at_their_first_run(tmp_path, device):
    kernel = _kernel(tmp_path)
    tuner = _inductor_autotuner(kernel)
    _run_tuner(tuner, 2)  # warm: its fast path cached before the session
    original = tuner.launchers[0]
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    with profiler.scope("compiled"):
        _run_tuner(tuner, 3)
    profiler.finalize(sid)
    node = _tree(tmp_path)[("compiled", "add_kernel")]
    assert node["count"] == 3 and node["time (ns)"] == 3 * device.duration
    assert device.stamped_runs() == 3 and len(device.ran) == 5
    meta = _meta(tmp_path)
    assert "CachingAutotuner.run" in meta["device_timer_launch_doors"] and meta["device_timer_launches_not_timed"] == 0
    assert tuner.launchers == [original] and "run" not in tuner.__dict__  # given back as found
    _run_tuner(tuner, 1)
    assert device.stamped_runs() == 3 and len(device.ran) == 6


def test_inductor_launchers_of_a_kernel_that_cannot_be_stamped_are_counted(tmp_path, device):
    kernel = _kernel(tmp_path, stages=())
    tuner = _inductor_autotuner(kernel)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=COUNTED)
    _run_tuner(tuner, 3)
    with pytest.warns(RuntimeWarning, match="3 launches"):
        profiler.finalize(sid)
    assert len(device.ran) == 3
    assert _meta(tmp_path)["device_timer_not_timed_kernels"]["add_kernel"]["launches"] == 3


def _static_autotuner(kernel):
    """Inductor's static CUDA launcher path: a real StaticallyLaunchedCudaKernel of the kernel (the
    stand-in of torch's C launcher in place of its own), loaded by a real
    StaticTritonCompileResult.make_launcher (which forgets the cubin's path), run by a real
    CachingAutotuner; made before the session."""
    from torch._inductor.runtime import triton_heuristics as heuristics  # noqa: I001 (torch is heavy)
    from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel

    kernel._cubin_path = kernel.metadata_group["add_kernel.cubin"]
    static = StaticallyLaunchedCudaKernel(kernel)
    static.__dict__["C_impl"] = compiled_kernels.StandinStaticLauncher
    return _autotuner_over(kernel, heuristics.StaticTritonCompileResult, static), static


def _in_triton_cache(tmp_path, monkeypatch):
    """Triton's cache folder of the stand-in kernel's hash (where a static kernel's stages lie)."""
    from triton.runtime.cache import get_cache_manager

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    return get_cache_manager(compiled_kernels.kernel_hash()).cache_dir


def test_inductor_static_launches_are_stamped_from_the_stages_in_tritons_cache(tmp_path, device, monkeypatch):
    kernel = compiled_kernels.compiled_kernel(
        _in_triton_cache(tmp_path, monkeypatch),
        ASTSource(JITFunction(add_kernel), dict(compiled_kernels.SIGNATURE), {"BLOCK": 1024}))
    tuner, static = _static_autotuner(kernel)
    _run_tuner(tuner, 1)
    assert static.cubin_path is None and device.stamped_runs() == 0
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    with profiler.scope("compiled"):
        _run_tuner(tuner, 3)
    profiler.finalize(sid)
    node = _tree(tmp_path)[("compiled", "add_kernel")]
    assert node["count"] == 3 and node["time (ns)"] == 3 * device.duration
    assert device.stamped_runs() == 3
    assert _meta(tmp_path)["device_timer_kernels_stamped_at_first_launch"] == 1
    _run_tuner(tuner, 1)  # given back: the static launcher's own, plain binary, null scratch
    assert device.stamped_runs() == 3 and len(device.ran) == 5


def test_inductor_static_launches_find_their_stages_in_inductors_triton_cache(tmp_path, device, monkeypatch):
    """A process that loaded its kernels from inductor's caches: inductor never set
    TRITON_CACHE_DIR, so Triton's own cache folder is not where inductor's workers put the stages."""
    from torch._inductor.runtime.cache_dir_utils import triton_cache_dir
    from triton.runtime.cache import _base32

    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("TRITON_HOME", str(tmp_path / "home"))  # Triton's own cache folder: not inductor's
    folder = os.path.join(triton_cache_dir(0), _base32(compiled_kernels.kernel_hash()))
    kernel = compiled_kernels.compiled_kernel(
        folder, ASTSource(JITFunction(add_kernel), dict(compiled_kernels.SIGNATURE), {"BLOCK": 1024}))
    tuner, static = _static_autotuner(kernel)
    monkeypatch.delenv("TRITON_CACHE_DIR")  # set by the autotuner built here; one unpickled from the cache sets none
    _run_tuner(tuner, 1)
    assert static.cubin_path is None
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    with profiler.scope("cached"):
        _run_tuner(tuner, 2)
    profiler.finalize(sid)
    assert _tree(tmp_path)[("cached", "add_kernel")]["count"] == 2 and device.stamped_runs() == 2
    assert _meta(tmp_path)["device_timer_launches_not_timed"] == 0
    assert triton.knobs.cache.dir.startswith(str(tmp_path / "home")) and not folder.startswith(str(tmp_path / "home"))
    assert not os.path.exists(os.path.join(triton.knobs.cache.dir, _base32(compiled_kernels.kernel_hash())))


def test_inductor_static_launches_without_the_stages_are_counted(tmp_path, device, monkeypatch):
    _in_triton_cache(tmp_path, monkeypatch)  # an empty cache: the FX graph cache brought only the cubin
    kernel = _kernel(tmp_path, stages=())
    tuner, _ = _static_autotuner(kernel)
    _run_tuner(tuner, 1)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=COUNTED)
    _run_tuner(tuner, 2)
    with pytest.warns(RuntimeWarning, match="2 launches"):
        profiler.finalize(sid)
    reason = _meta(tmp_path)["device_timer_not_timed_kernels"]["add_kernel"]["reason"]
    assert reason.startswith(untimed.NOT_RESTAMPED) and "static launcher" in reason


def test_tianshu_times_a_library_held_kernel_compiled_before_its_session(tmp_path, device):
    """backend="tianshu" takes its device times from the device_timer route: a kernel compiled
    before the session is stamped at its first launch there too, and the counts are in its metadata."""
    kernel = _kernel(tmp_path)
    sid = profiler.start(str(tmp_path / "p"), backend="tianshu")
    with profiler.scope("step"):
        _launch(kernel, 2)
    profiler.finalize(sid)
    node = _tree(tmp_path)[("step", "add_kernel")]
    assert node["count"] == 2 and node["time (ns)"] == 2 * device.duration and "host_timed_launches" not in node
    meta = _meta(tmp_path)
    assert meta["time_source"] == "device_timer"
    assert meta["device_timer_kernels_stamped_at_first_launch"] == 1 and meta["device_timer_launches_not_timed"] == 0


def test_a_stamped_binary_is_built_once_and_found_in_tritons_cache_after(tmp_path, device, monkeypatch):
    """The binary stage (ptxas on NVIDIA) runs for the first stamped copy of a kernel; another
    process stamping the same kernel the same way reads the binary from Triton's cache."""
    from flagtree.profiler.triton_glue import restamp

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    built = []
    real = compiled_kernels.StandinCompiler.make_cubin
    monkeypatch.setattr(compiled_kernels.StandinCompiler, "make_cubin",
                        lambda self, src, metadata: built.append(src) or real(self, src, metadata))
    kernel = _kernel(tmp_path)

    def edit(text, metadata):
        metadata["profile_scratch_size"] = 16
        return text.replace("ret void", "ret void ; edited")

    first, meta1 = restamp.edited_binary(kernel, "llir", edit)
    again, meta2 = restamp.edited_binary(kernel, "llir", edit)
    assert len(built) == 1 and first == again and b"edited" in first
    assert meta1["profile_scratch_size"] == meta2["profile_scratch_size"] == 16
    other, _ = restamp.edited_binary(kernel, "llir", lambda text, metadata: text + "; another edit\n")
    assert len(built) == 2 and other != first  # another edit: another entry


def test_a_kernel_whose_stamps_the_toolchain_refuses_is_counted_with_why(tmp_path, device):
    corex_triton.REJECTED.append("%globaltimer")  # the binary stage refuses the stamps' timer reads
    kernel = _kernel(tmp_path)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode=COUNTED)
    _launch(kernel, 2)
    with pytest.warns(RuntimeWarning, match="2 launches"):
        profiler.finalize(sid)
    counted = _meta(tmp_path)["device_timer_not_timed_kernels"]["add_kernel"]
    assert counted["launches"] == 2 and "unsupported instruction" in counted["reason"]
    assert len(device.ran) == 2 and device.stamped_runs() == 0


def test_another_kernel_of_the_same_name_that_failed_its_stamps_does_not_stop_this_one(tmp_path, device, monkeypatch):
    from flagtree.profiler.backends.device_timer import compiler_hook

    monkeypatch.setitem(compiler_hook.stats, "not_stamped_kernels", ["add_kernel"])  # an earlier compile's failure
    kernel = _kernel(tmp_path)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    _launch(kernel, 2)
    profiler.finalize(sid)
    assert _tree(tmp_path)[("add_kernel",)]["count"] == 2 and device.stamped_runs() == 2


def test_a_kernels_launcher_is_chosen_at_its_first_launch_and_kept_by_the_door(tmp_path, device):
    from flagtree.profiler.triton_glue.launch_sight import LaunchSight

    kernel = _kernel(tmp_path)
    tritons = kernel.run
    chosen = []

    def decide(compiled, launcher, kind):
        chosen.append(lambda *args: launcher(*args))
        return chosen[-1], None

    own = dict(kernel.__dict__)
    sight = LaunchSight(decide, inductor_module="no_such_inductor_runtime")
    sight.install()
    try:
        assert kernel.run is kernel.run is chosen[0] and len(chosen) == 1  # decided once
        # Kept by the door, not in the kernel: its own dictionary stays as Triton made it.
        assert kernel.__dict__ == own and type(kernel).__dict__["run"].chosen() == 1
        sight.pause(True)
        assert kernel.run is not chosen[0] and type(kernel.run) is type(tritons)  # Triton's launcher while paused
        sight.pause(False)
        assert kernel.run is chosen[0] and len(chosen) == 1
    finally:
        sight.uninstall()
    assert kernel.__dict__ == own and type(kernel.run) is type(tritons)
