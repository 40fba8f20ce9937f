"""The slot launcher: a stamped kernel's launcher call made native. It must call the launcher's
``launch`` with exactly the arguments Triton's own ``CudaLauncher.__call__`` passes, the profile
scratch being a ring slot. The installed Triton's real ``CudaLauncher.__call__`` (its code, on an
instance given a recording ``launch``) is the reference for its layout; the other layout is
checked against a stand-in of Triton 3.5/3.6's call (tests/standins/flat_launcher.py). The ring
on the host, a device-timer-sourced session open (conftest.py)."""
import types

import pytest

from support.triton_needs import skip_without_compiler_hooks

skip_without_compiler_hooks(module_level=True)

from triton.backends.nvidia.driver import CudaLauncher  # noqa: E402
from triton.runtime import _allocation  # noqa: E402

import flagtree.profiler as profiler  # noqa: E402
from flagtree.profiler import _native  # noqa: E402
from flagtree.profiler.backends.device_timer.slot_launch import slot_launcher  # noqa: E402
from flagtree.profiler.triton_glue.launcher_layout import call_layout  # noqa: E402
from standins.flat_launcher import FlatLauncher  # noqa: E402
from support.profiles import metrics_by_path  # noqa: E402

DT = _native.device_timer
T = _native.testing
TAG = DT.device_timer_layout()["align_tag"]
PROFILE_SCRATCH_AT = {"flat": 8, "packed": 12}  # where each layout passes the profile scratch to launch


class Recorder:
    """A launcher module's launch: keeps its arguments, and stamps the ring slot among them (the
    first int above 2**32, as the launch's grid, stream and function are small) as a stamped
    kernel's blocks would."""

    def __init__(self):
        self.calls, self.now = [], 1_000_000

    def __call__(self, *args):
        self.calls.append(args)
        slot = next((a for a in args if type(a) is int and a > 1 << 32), None)
        if slot is not None:
            T.device_timer_host_meta(slot, DT.device_timer_name_kernel("add_kernel"), (args[0], 1, 1), 128)
            T.device_timer_host_stamp(slot, 0, self.now, self.now + 5_000)
            self.now += 50_000


def _launcher(kind, **overrides):
    """A launcher of class `kind` as Triton's constructor leaves it, with a recording launch."""
    launcher = object.__new__(kind)
    fields = {"launch": Recorder(), "num_ctas": 1, "global_scratch_size": 0, "global_scratch_align": 1,
              "profile_scratch_size": 16, "profile_scratch_align": TAG, "launch_cooperative_grid": False,
              "launch_pdl": True, "arg_annotations": ("annotations",), "kernel_signature": b"sig", "gsan_enabled": False}
    fields.update(overrides)
    launcher.__dict__.update(fields)
    return launcher


@pytest.fixture
def session(ring, allocator, tmp_path, monkeypatch):
    from triton.runtime import driver

    monkeypatch.setattr(driver, "_active", types.SimpleNamespace(), raising=False)  # read by 3.8+ calls, unused here
    ring(64, 64)
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
    yield sid
    DT.device_timer_drain()  # the host ring's records reach the session before it closes
    profiler.finalize(sid)


CALL = (2, 1, 1, 7, 0x1234, ("packed",), None, None, None, "x", "y", 3)  # grid, stream, function, metadata, hooks, args


def _compare(kind, call=CALL):
    """Triton's call and the slot launcher's, one launch each: (their launch arguments with the
    profile scratch left out, the two profile scratches)."""
    triton_side, ours_side = _launcher(kind), _launcher(kind)
    layout = call_layout(triton_side)
    fast = slot_launcher(ours_side)
    assert fast is not ours_side
    triton_side(*call)
    fast(*call)
    at = PROFILE_SCRATCH_AT[layout]
    (theirs,), (mine,) = triton_side.launch.calls, ours_side.launch.calls
    return (theirs[:at] + theirs[at + 1:], mine[:at] + mine[at + 1:]), (theirs[at], mine[at])


@pytest.mark.parametrize("kind", [CudaLauncher, FlatLauncher], ids=["installed-triton", "flat-standin"])
def test_the_launch_gets_what_tritons_call_passes_with_a_ring_slot(session, kind, tmp_path):
    (theirs, mine), slots = _compare(kind)
    assert mine == theirs
    assert all(slots) and slots[0] != slots[1]  # one ring slot a launch
    assert DT.device_timer_stats()["launches"] == 2
    DT.device_timer_drain()
    profiler.finalize(session)
    assert metrics_by_path(str(tmp_path / "p.hatchet"))[("add_kernel",)]["count"] == 2  # both timed


def test_the_installed_tritons_launcher_is_recognised():
    assert call_layout(_launcher(CudaLauncher)) in ("flat", "packed")
    assert call_layout(_launcher(FlatLauncher)) == "flat"


def test_launchers_it_does_not_know_keep_tritons_call(session):
    class Other:
        def __call__(self, *args):
            pass

    for launcher in (_launcher(Other), _launcher(CudaLauncher, global_scratch_size=64),
                     _launcher(CudaLauncher, profile_scratch_align=128), _launcher(CudaLauncher, profile_scratch_size=0)):
        assert slot_launcher(launcher) is launcher
    if "gsan_enabled" in CudaLauncher.__call__.__code__.co_names:
        gsan = _launcher(CudaLauncher, gsan_enabled=True)
        assert slot_launcher(gsan) is gsan


def test_another_profile_allocator_gets_the_call_as_triton_makes_it(session):
    launcher = _launcher(CudaLauncher)
    fast = slot_launcher(launcher)
    asked = []
    _allocation.set_profile_allocator(lambda size, alignment, stream: asked.append((size, alignment, stream)) or 4096)
    fast(*CALL)
    assert asked == [(2 * 16, TAG, 7)]  # Triton's own call: two blocks of 16 bytes
    assert 4096 in launcher.launch.calls[0]


def test_a_call_by_keywords_goes_to_tritons_launcher(session):
    launcher = _launcher(CudaLauncher)
    fast = slot_launcher(launcher)
    fast(*CALL[:4], function=CALL[4], **({"kernel_metadata": CALL[5], "launch_metadata": None, "launch_enter_hook": None,
                                         "launch_exit_hook": None} if call_layout(launcher) == "packed" else {}))
    assert len(launcher.launch.calls) == 1


def test_between_windows_the_slot_is_null(session):
    launcher = _launcher(CudaLauncher)
    fast = slot_launcher(launcher)
    profiler.deactivate(session)
    fast(*CALL)
    profiler.activate(session)
    at = PROFILE_SCRATCH_AT[call_layout(launcher)]
    assert launcher.launch.calls[0][at] == 0 and DT.device_timer_stats()["idle_launches"] == 1


def test_other_attributes_are_tritons_launchers(session):
    launcher = _launcher(CudaLauncher, num_ctas=2)
    fast = slot_launcher(launcher)
    assert fast.num_ctas == 2 and fast.profile_scratch_size == 16 and fast.triton_launcher is launcher
    with pytest.raises(AttributeError):
        fast.no_such_attribute
