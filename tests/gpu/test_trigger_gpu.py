"""Windows of an armed trigger on a real GPU: the nvidia backend (CUPTI) records exactly the
launches of each window's steps, CUPTI is not subscribed between windows, and a signal opens a
window under the command as it does on the CPU. A steps window known to be near is attached
ahead, parked, off the program's thread, and records only its own steps."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import flagtree.profiler as profiler
from flagtree.profiler import _native
from support.kernels import launch_add, tensors
from support.profiles import kernel_counts, load_json, load_tree


@pytest.fixture(autouse=True)
def disarmed():
    yield
    profiler.disarm()
    profiler.finalize()


def test_step_windows_record_their_steps_and_cupti_is_released_between_them(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_CUPTI_IDLE_S", "0")  # let go at once, never attached ahead
    x, y, out = tensors(1024)
    launch_add(x, y, out)  # compiled before arming
    torch.cuda.synchronize()
    profiler.release()  # CUPTI kept attached by an earlier test's session in this process
    assert not _native.nvidia.cupti_attach_stats()["parked"]
    profiler.arm("steps:2-3,6-6", name=str(tmp_path / "w"), backend="nvidia")
    parked = []
    for step in range(8):
        with profiler.scope(f"step{step}"):
            for _ in range(step + 1):
                launch_add(x, y, out)
        torch.cuda.synchronize()
        profiler.step()
        parked.append(_native.nvidia.cupti_attach_stats()["parked"])
    profiler.disarm()
    assert not any(parked)  # released after each window, never parked while idle
    first = kernel_counts(load_tree(tmp_path / "w.part1.hatchet")[0])
    assert first == {("step2", "add_kernel"): 3, ("step3", "add_kernel"): 4}
    assert kernel_counts(load_tree(tmp_path / "w.part2.hatchet")[0]) == {("step6", "add_kernel"): 7}
    meta = load_json(tmp_path / "w.meta.json")
    assert meta["part_steps"] == [[2, 3], [6]] and meta["lost_launches"] == 0


def test_a_window_attached_ahead_counts_only_its_steps(tmp_path):
    x, y, out = tensors(1024)
    launch_add(x, y, out)
    torch.cuda.synchronize()
    profiler.start(str(tmp_path / "earlier"), backend="nvidia")  # the libcupti this process uses
    profiler.finalize()
    profiler.release()
    before = _native.nvidia.cupti_attach_stats()
    profiler.arm("steps:40-41,100-101", name=str(tmp_path / "w"), backend="nvidia")
    parked = []
    for step in range(103):
        with profiler.scope(f"step{step}"):
            for _ in range(step % 5 + 1):
                launch_add(x, y, out)
        torch.cuda.synchronize()
        time.sleep(0.002)  # the pace between windows: the park comes some steps before each window
        profiler.step()
        parked.append(_native.nvidia.cupti_attach_stats()["parked"])
    profiler.disarm()
    after = _native.nvidia.cupti_attach_stats()
    facts = (parked, before, after)
    assert not any(parked[42:50]), facts  # let go at the close
    assert after["parks_ahead"] == before["parks_ahead"] + 2, facts  # ahead of both windows
    assert after["subscriptions"] == before["subscriptions"] + 2, facts  # both parks, no attach on a step
    assert kernel_counts(load_tree(tmp_path / "w.part2.hatchet")[0]) == {("step100", "add_kernel"): 1,
                                                                         ("step101", "add_kernel"): 2}
    assert load_json(tmp_path / "w.meta.json")["lost_launches"] == 0


SCRIPT = textwrap.dedent('''
    import os, sys, time, torch
    sys.path.insert(0, sys.argv[1])
    import flagtree.profiler as profiler
    from support.kernels import launch_add, tensors
    x, y, out = tensors(1024)
    for step in range(6):
        with profiler.scope(f"step{step}"):
            launch_add(x, y, out)
        torch.cuda.synchronize()
        if step == 1:
            print("READY", flush=True)
            while not os.path.exists("go"):
                time.sleep(0.02)
        profiler.step()
''')


def test_a_signal_opens_a_window_under_the_command(tmp_path):
    (tmp_path / "work.py").write_text(SCRIPT)
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    child = subprocess.Popen([sys.executable, "-m", "flagtree.profiler.cli", "--trigger", "signal", "--window",
                              "steps=2", "work.py", tests], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "READY"
    child.send_signal(signal.SIGUSR1)
    (tmp_path / "go").touch()
    _, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    assert (tmp_path / "work.part1.hatchet").exists(), err
    counts = kernel_counts(load_tree(tmp_path / "work.part1.hatchet")[0])
    assert counts == {("step2", "add_kernel"): 1, ("step3", "add_kernel"): 1}
    assert load_json(tmp_path / "work.meta.json")["backend"] == "nvidia"
