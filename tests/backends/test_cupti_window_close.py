"""A schedule's window closed on the writer thread (session_outputs.write_parts with defer, the
nvidia backend's flush_off_thread): step() returns before CUPTI is flushed and the part taken,
the next window waits for that close, and every record lands in its own window's part. On the
CPU against tests/standins/cupti_activity_standin.c (records stay in its buffer until a flush)."""
import threading

import flagtree.profiler as profiler
from flagtree.profiler import _native, part_writer
from flagtree.profiler.session import find_session
from test_cupti_attach import count, kernel_count, nvidia_on_standin, standin  # noqa: F401 (fixtures)
from vendor_outputs import load_meta
from support.writer_gate import WAIT_S, Gate


def test_step_returns_before_the_windows_flush_and_the_next_window_waits_for_it(standin, tmp_path):
    gate = Gate()
    part_writer.hold = gate
    try:
        sid = profiler.start(name=str(tmp_path / "w"), backend="nvidia",
                             schedule=profiler.schedule(wait=1, active=1, repeat=2))
        profiler.step()  # step 0: wait
        for _ in range(3):
            standin.standin_launch()  # step 1: the window
        profiler.step()  # closes it: handed over, not flushed or taken
        assert gate.entered.wait(WAIT_S)
        job = find_session(sid).part_jobs[-1]
        assert not job.closed.is_set() and job.taken is None and job.times()["caller_ns"] > 0
        opening = threading.Thread(target=profiler.step)  # ends step 2, opens step 3's window
        opening.start()
        opening.join(0.3)
        assert opening.is_alive()  # waiting for the first window's close
        gate.opened.set()
        opening.join(WAIT_S)
        assert not opening.is_alive() and job.closed.is_set()
        for _ in range(2):
            standin.standin_launch()  # step 3: the second window
        profiler.step()
        profiler.finalize()
    finally:
        part_writer.hold = None
    meta = load_meta(tmp_path / "w")
    parts = [str(p).removesuffix(".hatchet") for p in meta["parts"]]
    assert [kernel_count(p) for p in parts] == [3, 2, 0]
    assert meta["part_steps"][:2] == [[1], [3]]
    assert all("take_ns" in t for t in meta["part_times"][:2])
    assert (meta["kernel_records"], meta["unattributed_records"], meta["lost_launches"]) == (5, 0, 0)


def test_finalize_right_after_a_window_waits_for_its_close(standin, tmp_path):
    profiler.start(name=str(tmp_path / "f"), backend="nvidia", schedule=profiler.schedule(wait=0, active=1))
    for _ in range(4):
        standin.standin_launch()
    profiler.step()  # the window's close goes to the writer thread
    profiler.finalize()
    meta = load_meta(tmp_path / "f")
    assert [kernel_count(str(p).removesuffix(".hatchet")) for p in meta["parts"]][0] == 4
    assert meta["kernel_records"] == 4 and meta["lost_launches"] == 0


def test_back_to_back_windows_keep_another_threads_launch_made_while_one_closes(standin, tmp_path):
    gate = Gate()
    part_writer.hold = gate
    try:
        profiler.start(name=str(tmp_path / "b"), backend="nvidia", schedule=profiler.schedule(wait=0, active=1))
        quiet_before = _native.nvidia.cupti_attach_stats()["quiet_switches"]
        standin.standin_launch()  # step 0: the first window
        stepping = threading.Thread(target=profiler.step)  # closes it, opens step 1's window at once
        stepping.start()
        assert gate.entered.wait(WAIT_S)  # the close is held on the writer thread; step() waits for it
        standin.standin_launch()  # this thread's launch meanwhile: in one window or the other, not lost
        gate.opened.set()
        stepping.join(WAIT_S)
        assert not stepping.is_alive()
        standin.standin_launch()  # step 1
        profiler.step()
        quiet_switches = _native.nvidia.cupti_attach_stats()["quiet_switches"] - quiet_before
        profiler.finalize()
    finally:
        part_writer.hold = None
    meta = load_meta(tmp_path / "b")
    parts = [str(p).removesuffix(".hatchet") for p in meta["parts"]]
    assert sum(kernel_count(p) for p in parts) == 3 and kernel_count(parts[1]) >= 1
    assert (meta["kernel_records"], meta["lost_launches"]) == (3, 0)
    assert quiet_switches == 0  # CUPTI stayed on from one window to the next
