"""flagtree-profiler --schedule and --trigger on a script: real Triton kernels in the interpreter
(-b interpreter), the command as a subprocess. The script prints READY <step> at the steps the test
names and waits there for a go file, so the test sends its signal or touches its file at a known
step; each window then holds known steps."""
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from flagtree.profiler.cli import command as cli
from standins import build_standin
from support.profiles import kernel_counts, load_json, load_tree

SCRIPT = textwrap.dedent('''
    import os, sys, time
    import torch, triton, triton.language as tl
    import flagtree.profiler as profiler

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
                 mask=mask)

    x, y = torch.rand(64), torch.rand(64)
    out = torch.empty_like(x)
    steps = int(sys.argv[1])
    pauses = [int(a) for a in sys.argv[2].split(",")] if len(sys.argv) > 2 else []
    assert profiler.start("own") == -1 or "--schedule" in os.environ.get("EXPECT", "")
    for step in range(steps):
        with profiler.scope(f"step{step}"):
            add_kernel[(1,)](x, y, out, 64, BLOCK=64)
        if step in pauses:
            print(f"READY {step}", flush=True)
            while not os.path.exists(f"go{step}"):
                time.sleep(0.02)
            time.sleep(0.6)  # past a file trigger's 0.5 s between reads
        profiler.step()
    profiler.finalize()
''')


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "work.py").write_text(SCRIPT)
    return tmp_path


def environment(**extra):
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONWARNINGS="default")
    for name in ("FLAGTREE_PROFILER_TRIGGER", "FLAGTREE_PROFILER_WINDOW", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    env.update(extra)
    return env


def start(workdir, options, script_args, **env):
    return subprocess.Popen([sys.executable, "-m", "flagtree.profiler.cli", "-b", "interpreter", *options,
                             "work.py", *script_args], cwd=workdir, env=environment(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_ready(child, step):
    line = child.stdout.readline()
    assert line.strip() == f"READY {step}", (line, child.stderr.read() if child.poll() is not None else "")


def finish(child):
    out, err = child.communicate(timeout=180)
    assert child.returncode == 0, err
    return err


def steps_in(path):
    return sorted(int(p[0][4:]) for p in kernel_counts(load_tree(path)[0]))


def test_a_signal_opens_a_window_of_steps_and_a_second_signal_the_next(workdir):
    child = start(workdir, ["--trigger", "signal", "--window", "steps=2", "-n", "w"], ["9", "2,5"])
    wait_ready(child, 2)
    child.send_signal(signal.SIGUSR1)
    (workdir / "go2").touch()
    wait_ready(child, 5)
    child.send_signal(signal.SIGUSR1)
    (workdir / "go5").touch()
    err = finish(child)
    assert "armed, idle until signal:SIGUSR1 (window: steps=2)" in err
    assert "2 windows written" in err and "wrote 2 parts, w.part1.hatchet to w.part2.hatchet" in err
    assert "defer to the command's trigger" in err  # the script's own start()
    assert [steps_in(workdir / f"w.part{k}.hatchet") for k in (1, 2)] == [[3, 4], [6, 7]]
    meta = load_json(workdir / "w.meta.json")
    assert meta["part_steps"] == [[3, 4], [6, 7]] and meta["ignored_triggers"] == 0
    assert sorted(p.name for p in workdir.iterdir() if p.name.startswith("w.")) == [
        "w.meta.json", "w.part1.hatchet", "w.part2.hatchet"]


def test_a_touched_file_opens_a_window_and_the_program_end_writes_it(workdir):
    child = start(workdir, ["--trigger", "file:trigger-file", "--window", "steps=5", "-d", "tree,trace"], ["6", "3"])
    wait_ready(child, 3)
    (workdir / "trigger-file").touch()
    (workdir / "go3").touch()
    err = finish(child)
    assert steps_in(workdir / "work.part1.hatchet") == [4, 5]  # cut short by the end of the program
    meta = load_json(workdir / "work.meta.json")
    assert [(w["steps"], w["closed_by"]) for w in meta["windows"]] == [([4, 5, 6], "exit")]
    assert meta["parts"] == ["work.part1.hatchet", "work.part1.chrome_trace"]
    assert "wrote work.part1.chrome_trace" in err


def test_an_idle_program_writes_nothing(workdir):
    child = start(workdir, ["--trigger", "signal:HUP", "--window", "seconds=1"], ["4"])
    err = finish(child)
    assert "signal:SIGHUP opened no window: nothing was written" in err
    assert sorted(os.listdir(workdir)) == ["work.py"]


def test_a_window_the_disk_refused_is_said_not_written(workdir, tmp_path_factory):
    shim = build_standin("write_faults.c", tmp_path_factory.mktemp("shim"), "libwrite_faults.so", ["-ldl"])
    preload = " ".join(filter(None, [os.environ.get("LD_PRELOAD"), shim]))  # after libasan's in an ASan run
    faults = dict(LD_PRELOAD=preload, FTP_FAULT_DIR=os.path.realpath(workdir), FTP_FAULT_NAME="w.", FTP_FAULT_OP="write",
                  FTP_FAULT_ERRNO=str(errno.ENOSPC), FTP_FAULT_AFTER="0")
    child = start(workdir, ["--trigger", "steps:1-2", "-n", "w"], ["4"], **faults)
    err = finish(child)  # the program's own exit status: it ran; the loss is said, not hidden
    assert "window 1 was not written" in err and os.strerror(errno.ENOSPC) in err
    assert "steps:1-2: nothing was written; 1 window not written" in err and "opened no window" not in err
    assert sorted(os.listdir(workdir)) == ["work.py"]


def test_every_rank_opens_its_window_on_the_same_file(workdir):
    env = dict(FLAGTREE_PROFILER_TRIGGER="file:trigger-file", FLAGTREE_PROFILER_WINDOW="steps=2", WORLD_SIZE="2")
    children = [start(workdir, ["-n", "r"], ["6", "1"], RANK=str(rank), **env) for rank in (0, 1)]
    for child in children:
        wait_ready(child, 1)
    (workdir / "trigger-file").touch()
    (workdir / "go1").touch()
    for child in children:
        finish(child)
    for rank in (0, 1):
        assert steps_in(workdir / f"r.rank{rank}.part1.hatchet") == [2, 3]
        meta = load_json(workdir / f"r.rank{rank}.meta.json")
        assert meta["rank"] == rank and meta["trigger"] == f"file:{workdir / 'trigger-file'}"


def test_step_ranges_from_the_environment(workdir):
    child = start(workdir, [], ["8"], FLAGTREE_PROFILER_TRIGGER="steps:0-1,5-6")
    finish(child)
    assert [steps_in(workdir / f"work.part{k}.hatchet") for k in (1, 2)] == [[0, 1], [5, 6]]


def test_schedule_through_the_command(workdir):
    child = start(workdir, ["--schedule", "wait=1,active=2,repeat=1"], ["6"], EXPECT="--schedule")
    err = finish(child)
    meta = load_json(workdir / "work.meta.json")
    assert meta["schedule"] == "schedule(wait=1, warmup=0, active=2, repeat=1, skip_first=0)"
    assert meta["part_steps"][0] == [1, 2] and steps_in(workdir / "work.part1.hatchet") == [1, 2]
    assert "wrote 2 parts" in err


@pytest.mark.parametrize("argv, message", [
    (["--trigger", "signal:KILL"], "not a signal a trigger takes"),
    (["--trigger", "file:"], "is none of signal"),
    (["--trigger", "steps:5-2"], "0 <= A <= B"),
    (["--trigger", "signal", "--window", "steps=0"], "at least 1 step"),
    (["--trigger", "signal", "--window", "hours=1"], "not one of steps=N"),
    (["--window", "steps=2"], "--window needs a trigger"),
    (["--trigger", "steps:1-2", "--window", "steps=2"], "is its own window"),
    (["--trigger", "signal", "--schedule", "active=1"], "cannot be combined"),
    (["--schedule", "active=0"], "active must be at least 1"),
    (["--schedule", "every=2"], "is not one of wait=W"),
])
def test_bad_texts_are_usage_errors(tmp_path, capsys, argv, message):
    (tmp_path / "s.py").write_text("")
    assert cli.main([*argv, str(tmp_path / "s.py")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("flagtree-profiler: error: ") and message in err
    assert sorted(os.listdir(tmp_path)) == ["s.py"]


def test_a_bad_trigger_in_the_environment_names_the_variable(tmp_path, capsys, monkeypatch):
    (tmp_path / "s.py").write_text("")
    monkeypatch.setenv("FLAGTREE_PROFILER_TRIGGER", "signal:STOP")
    assert cli.main([str(tmp_path / "s.py")]) == 2
    assert "FLAGTREE_PROFILER_TRIGGER: trigger 'signal:STOP'" in capsys.readouterr().err
