"""CUPTI quiet while no session is active (csrc/backends/dialect/dialect_tracer_quiet.h), on the CPU:
the real nvidia backend and native tracer against tests/standins/cupti_activity_standin.c, whose
disabled kinds make no records and whose buffered records survive a disable until a flush."""
import flagtree.profiler as profiler
from flagtree.profiler import _native
from test_cupti_attach import count, kernel_count, nvidia_on_standin, standin  # noqa: F401 (fixtures)
from vendor_outputs import load_meta


def quiet():
    return _native.nvidia.cupti_attach_stats()["quiet"]


def start(base, **options):
    return profiler.start(name=str(base), backend="nvidia", **options)


def launches(lib, n):
    for _ in range(n):
        lib.standin_launch()


def collection_on(lib):
    return bool(lib.standin_kernel_kind_enabled()) and bool(lib.standin_launch_callback_enabled())


def test_deactivated_launches_make_no_callback_and_no_record(standin, tmp_path):
    sid = start(tmp_path / "a")
    launches(standin, 2)
    disables = count(standin, "kind_disable")
    profiler.deactivate(sid)
    assert quiet() and count(standin, "kind_disable") > disables
    assert not standin.standin_kernel_kind_enabled() and not standin.standin_launch_callback_enabled()
    callbacks, disabled = count(standin, "callback"), count(standin, "kind_disable")
    launches(standin, 5)
    assert count(standin, "callback") == callbacks
    profiler.deactivate(sid)  # again: already quiet, nothing switched
    assert count(standin, "kind_disable") == disabled
    profiler.activate(sid)
    assert not quiet() and collection_on(standin)
    launches(standin, 3)
    profiler.finalize()
    meta = load_meta(tmp_path / "a")
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (5, 0, 0)
    assert kernel_count(tmp_path / "a") == 5


def test_records_buffered_before_the_switch_off_are_delivered(standin, tmp_path):
    sid = start(tmp_path / "a")
    launches(standin, 4)  # records in the library's buffer, not flushed
    profiler.deactivate(sid)
    assert quiet()
    profiler.finalize()  # a deactivated session's finalize: flushed while quiet
    assert load_meta(tmp_path / "a")["kernel_records"] == 4
    assert kernel_count(tmp_path / "a") == 4
    # Parked quiet: the next session turns collection back on and records.
    start(tmp_path / "b")
    assert collection_on(standin)
    launches(standin, 2)
    profiler.finalize()
    assert load_meta(tmp_path / "b")["kernel_records"] == 2


def test_one_active_session_keeps_collection_on(standin, tmp_path):
    a, b = start(tmp_path / "a"), start(tmp_path / "b")
    profiler.deactivate(a)
    assert not quiet() and collection_on(standin)
    launches(standin, 2)  # b's only
    profiler.deactivate(b)
    assert quiet()
    launches(standin, 3)  # nobody's
    profiler.activate(a)
    assert collection_on(standin)
    launches(standin, 1)  # a's only
    profiler.finalize()
    assert load_meta(tmp_path / "a")["kernel_records"] == 1
    assert load_meta(tmp_path / "b")["kernel_records"] == 2
    assert load_meta(tmp_path / "a")["unattributed_records"] == load_meta(tmp_path / "b")["unattributed_records"] == 0


def test_a_session_started_while_another_is_deactivated(standin, tmp_path):
    a = start(tmp_path / "a")
    profiler.deactivate(a)
    assert quiet()
    b = start(tmp_path / "b")
    assert not quiet() and collection_on(standin)
    launches(standin, 3)
    profiler.finalize(b)  # a is still open and deactivated: quiet again
    assert quiet()
    launches(standin, 2)
    profiler.activate(a)
    launches(standin, 1)
    profiler.finalize(a)
    assert load_meta(tmp_path / "b")["kernel_records"] == 3
    assert load_meta(tmp_path / "a")["kernel_records"] == 1


def test_a_launch_cut_off_by_the_switch_does_not_swallow_later_ones(standin, tmp_path):
    sid = start(tmp_path / "a")
    standin.standin_launch_enter()  # another thread's launch call, mid-way: its exit never comes
    profiler.deactivate(sid)
    standin.standin_launch_exit()  # the callbacks are off by now
    profiler.activate(sid)
    launches(standin, 2)  # this thread's next launches are outermost calls again, not nested ones
    profiler.finalize()
    meta = load_meta(tmp_path / "a")
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (3, 0, 0)


def test_a_schedule_is_quiet_between_its_windows(standin, tmp_path):
    profiler.start(name=str(tmp_path / "s"), backend="nvidia", schedule=profiler.schedule(wait=2, active=1, repeat=2))
    seen = []
    for _ in range(6):
        seen.append(quiet())
        launches(standin, 2)
        profiler.step()
    profiler.finalize()
    assert seen == [True, True, False, True, True, False]
    meta = load_meta(tmp_path / "s")
    assert meta["kernel_records"] == 4 and len(meta["parts"]) == 3  # a window each, then the (empty) rest
    assert [kernel_count(str(part).removesuffix(".hatchet")) for part in meta["parts"]] == [2, 2, 0]
