"""backend="tianshu" picks its time source: device times from the device_timer route on a target
whose Triton supports it (a stand-in CoreX target: its compiler calls the stages inspection
hook, its launcher passes profile scratch, the NVVM LLVM IR stamper edits its llir stage), host
times otherwise, with the reason in the metadata; time_source= forces either."""
import json

import pytest

import flagtree.profiler as profiler
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from flagtree.profiler.backends.device_timer import compiler_hook, llir_stamps
from standins import corex_triton
from standins.corex_triton_old_driver import OldCorexDriver
from support.profiles import metrics_by_path

T = _native.testing


def _host_ring(slots, batch, graph_records):
    """The device_timer ring over its host stand-in (no GPU): "device" memory is host memory."""
    assert graph_records == 0  # the LLVM IR stamps have no graph path: captured launches get no slot
    T.device_timer_host_ring(slots, batch, 0, graph_records=graph_records)
    return {"offset_ns": 0, "uncertainty_ns": 0, "realtime_minus_probe_ns": 0}


@pytest.fixture
def corex(monkeypatch):
    """A stand-in CoreX target active, the device_timer ring on the host; all undone after."""
    monkeypatch.setattr(get_backend("device_timer"), "start_ring", _host_ring)

    def install(driver_cls=corex_triton.StandinCorexDriver):
        return corex_triton.install(monkeypatch, driver_cls).active

    yield install
    if _native.device_timer.device_timer_running():
        T.device_timer_host_hold(False)
        _native.device_timer.device_timer_free()


def _run_stamped_launch(active, start_ns, end_ns, grid=(3, 1, 1)):
    """Compiles the stand-in kernel through its stages and launches it once: the "device" does
    what the stamped kernel's blocks do to the slot the launcher got (nothing for a null one)."""
    compiler = active.compiler_cls(active.get_current_target())
    metadata, outputs = corex_triton.compile_kernel(compiler)

    def kernel(slot, grid_dims):
        if slot:
            T.device_timer_host_meta(slot, _native.device_timer.device_timer_kernel_id("add_kernel"), grid_dims, 64 * 4)
            T.device_timer_host_stamp(slot, 0, start_ns, end_ns)

    active.launcher_cls(metadata, kernel)(grid, 0x77)
    return metadata, outputs


def test_a_supporting_target_gets_device_times(tmp_path, corex):
    active = corex()
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu")
    with profiler.scope("step"):
        metadata, outputs = _run_stamped_launch(active, 1_000_000, 1_025_000)
    profiler.finalize(sid)
    # The llir stage's text carries the stamps, and the launcher was asked for the slot.
    assert outputs["llir"].count(f"call void @{llir_stamps.ENTRY_HELPER}(") == 1
    assert outputs["llir"].count(f"call void @{llir_stamps.EXIT_HELPER}(") == 2  # two ret void
    assert metadata["profile_scratch_size"] == compiler_hook.SCRATCH_BYTES and metadata["name"] == "add_kernel"
    node = metrics_by_path(tmp_path / "t.hatchet")[("step", "add_kernel")]
    assert node["count"] == 1 and node["time (ns)"] == 25_000 and "host_timed_launches" not in node
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "device_timer" and meta["device_timer_records"] == 1
    assert "corex:71" in meta["time_source_reason"] and "'llir'" in meta["time_source_reason"]
    assert "LLVM IR" in meta["device_timer_stamps"]
    assert not compiler_hook.installed()  # the route is taken down with the last session


def test_a_launcher_without_profile_scratch_keeps_host_times_and_says_why(tmp_path, corex):
    corex(OldCorexDriver)
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu")
    from triton import knobs

    class Meta:
        data = {"name": "corex_kernel", "stream": 0, "function": None}

    knobs.runtime.launch_enter_hook(Meta)
    knobs.runtime.launch_exit_hook(Meta)
    profiler.finalize(sid)
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "host" and meta["host_timed_launches"] == 1
    assert "passes no profile scratch pointer" in meta["time_source_reason"]
    assert metrics_by_path(tmp_path / "t.hatchet")[("corex_kernel",)]["host_timed_launches"] == 1
    assert not compiler_hook.installed()


def test_time_source_device_timer_fails_with_the_reason_where_the_route_cannot_run(tmp_path, corex):
    corex(OldCorexDriver)
    with pytest.raises(Exception, match="time_source=device_timer: .*no profile scratch pointer"):
        profiler.start(str(tmp_path / "t"), backend="tianshu", mode="time_source=device_timer")
    assert profiler.session.open_sessions() == []


def test_time_source_host_keeps_host_times_on_a_supporting_target(tmp_path, corex):
    active = corex()
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu", mode="time_source=host")
    metadata, outputs = _run_stamped_launch(active, 0, 10)
    profiler.finalize(sid)
    assert "profile_scratch_size" not in metadata and llir_stamps.ENTRY_HELPER not in outputs["llir"]
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "host" and meta["time_source_reason"] == "time_source=host was asked for"


def test_a_toolchain_that_rejects_the_stamps_compiles_the_kernel_unstamped(tmp_path, corex):
    active = corex()
    corex_triton.REJECTED.append("%globaltimer")
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu")
    with pytest.warns(RuntimeWarning, match="rejected the stamped code"):
        metadata, outputs = _run_stamped_launch(active, 0, 10)
    profiler.finalize(sid)
    assert metadata["profile_scratch_size"] == 0 and b"globaltimer" not in outputs["cubin"]
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["device_timer_kernels_not_stamped"] == ["add_kernel"] and meta["device_timer_kernels_stamped"] == 0


def test_the_interpreter_keeps_host_times_and_says_why(tmp_path):
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu")
    profiler.finalize(sid)
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "host" and "interpreter" in meta["time_source_reason"]


def test_an_open_session_s_time_source_is_kept(tmp_path, corex):
    corex(OldCorexDriver)
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu")
    with pytest.raises(ValueError, match="open tianshu sessions take host times"):
        profiler.start(str(tmp_path / "u"), backend="tianshu", mode="time_source=device_timer")
    profiler.finalize(sid)


def test_time_source_values_are_checked():
    with pytest.raises(ValueError, match="time_source"):
        get_backend("tianshu").check_mode("time_source=device")
    assert "time_source=device_timer" in get_backend("tianshu").check_mode("time_source=device_timer").canonical()


def test_the_route_answer_for_a_target_is_kept_between_session_starts(corex, monkeypatch):
    from flagtree.profiler.backends.device_timer import route

    corex()
    calls = []
    real = corex_triton.StandinCorexCompiler.add_stages
    monkeypatch.setattr(corex_triton.StandinCorexCompiler, "add_stages",
                        lambda self, *args: calls.append(1) or real(self, *args))
    first = route.route_support()
    kinds = []
    real_kind = route.stampers.target_kind
    monkeypatch.setattr(route.stampers, "target_kind", lambda target: kinds.append(1) or real_kind(target))
    second = route.route_support()
    assert first.supported and second is first
    assert len(calls) <= 1  # inspected at most once (a cached answer from an earlier test needs none)
    assert kinds == []  # nor is the disk searched for CoreX's driver again


def test_a_device_timed_session_with_kernel_side_scopes_is_attached_to_them(tmp_path, corex, monkeypatch):
    """Where kernel-side scopes are compiled in beside the stamps (PTX targets: NVIDIA's cuda
    through tianshu's auto), the tianshu session is attached to the scopes too; they see the
    same session (its data kind, id, slot) with the device timer's state."""
    import torch

    from flagtree.profiler.backends.device_timer import DeviceTimerBackend
    from flagtree.profiler.backends.device_timer.scopes import DeviceTimerScopes, scope_options

    def scopes_in_host_memory(self, options, fallback):
        made = DeviceTimerScopes(new_buffer=lambda n: torch.zeros(n, dtype=torch.uint8), synchronize=lambda: None)
        made.install(scope_options(), fallback)
        self.scopes, self.scopes_state = made, "on"
        self._undo.append(lambda: (setattr(self, "scopes", None), made.stop()))

    monkeypatch.setattr(DeviceTimerBackend, "_install_scopes", scopes_in_host_memory)
    active = corex()
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu", data="trace")
    with profiler.scope("step"):
        _run_stamped_launch(active, 2_000_000, 2_040_000)
    profiler.finalize(sid)
    meta = json.load(open(tmp_path / "t.meta.json"))
    assert meta["time_source"] == "device_timer" and meta["device_timer_scopes"] == "on"
    events = [e for e in json.load(open(tmp_path / "t.chrome_trace"))["traceEvents"] if e.get("name") == "add_kernel"]
    assert len(events) == 1 and events[0]["dur"] == pytest.approx(40.0)


def test_the_device_timer_route_pauses_and_resumes_with_the_tianshu_sessions_activity(tmp_path, corex):
    from flagtree.profiler.triton_glue import stages

    corex()
    before = stages.compiler_knobs()
    sid = profiler.start(str(tmp_path / "t"), backend="tianshu")
    route = stages.compiler_knobs()
    assert compiler_hook.MODE_PREFIX in route[1]
    profiler.deactivate(sid)
    assert stages.compiler_knobs() == before  # nothing recorded: launches as with no profiler
    profiler.activate(sid)
    assert stages.compiler_knobs() == route
    profiler.finalize(sid)
    assert stages.compiler_knobs() == before
