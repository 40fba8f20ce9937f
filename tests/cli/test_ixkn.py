"""flagtree-profiler --ixkn end to end on the CPU: the target (real Triton kernels, interpreter)
under the stand-in ixkn-cli, our tianshu session inside it, ixKN's CSV folded into kernel nodes."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from support.package_path import PACKAGE_ROOT

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN = os.path.join(ROOT, "tests", "standins", "ixkn_cli_standin.py")
TARGET = """
import sys, time
sys.path.insert(0, {tests!r})
from support.kernels import launch_add, launch_copy, tensors
import flagtree.profiler as fp
x, y, o = tensors()
print("target says hello", flush=True)
with fp.scope("work"):
    for _ in range(3):
        launch_add(x, y, o)
    launch_copy(x, o)
if sys.argv[1:] == ["wait"]:
    open("ready", "w").close()
    time.sleep(60)
sys.exit(int(sys.argv[1]) if sys.argv[1:] else 0)
"""
# The stand-in's launch order: what the target above launches, plus a kernel the profile never saw.
KERNELS = "add_kernel,copy_kernel,add_kernel*2,phantom_kernel"


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, TRITON_INTERPRET="1", IXKN_STANDIN_KERNELS=KERNELS)
    env.pop("FLAGTREE_PROFILER_BACKEND", None)
    env.update(extra)
    return env


def _command(*options, target_args=()):
    return [sys.executable, "-m", "flagtree.profiler.cli", "--ixkn", "--ixkn-cli", STANDIN, "-n", "run", *options,
            "target.py", *target_args]


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "target.py").write_text(TARGET.format(tests=os.path.join(ROOT, "tests")))
    return tmp_path


def _run(workdir, *options, target_args=(), **env):
    return subprocess.run(_command(*options, target_args=target_args), cwd=workdir, env=_env(**env),
                          capture_output=True, text=True, timeout=300)


def _kernels(workdir):
    root = json.load(open(workdir / "run.hatchet"))[0]
    work = next(c for c in root["children"] if c["frame"]["name"] == "work")
    return {c["frame"]["name"]: c["metrics"] for c in work["children"]}, root


def test_the_saved_report_folds_per_launch_in_name_order(workdir):
    # ixkn-cli prints no CSV when it saves a report (-o), --csv or not: the rows come from the
    # saved report's re-import.
    done = _run(workdir, target_args=("3",))
    assert done.returncode == 3, done.stderr
    assert "target says hello" in done.stdout and "Kernel ID" not in done.stdout  # CSV kept, not echoed
    kernels, root = _kernels(workdir)
    add, copy = kernels["add_kernel"], kernels["copy_kernel"]
    # add_kernel is ixKN's kernels 1, 3 and 4; copy_kernel is kernel 2 (Grid Size = 2 * kernel id).
    assert add["tianshu.launch_statistics.grid_size"] == pytest.approx((2 + 6 + 8) / 3)
    assert add["tianshu.occupancy.achieved_occupancy (%)"] == pytest.approx((10 + 30 + 40) / 3)
    assert copy["tianshu.launch_statistics.grid_size"] == pytest.approx(4)
    assert add["tianshu.launch_statistics.shared_memory_configuration_size (byte)"] == pytest.approx(3 * 1024)
    assert add["host_timed_launches"] == 3 and copy["host_timed_launches"] == 1
    held = next(c for c in root["children"] if c["frame"]["name"] == "<unmatched vendor rows>")
    assert held["children"][0]["children"][0]["frame"]["name"] == "phantom_kernel"
    vendor = json.load(open(workdir / "run.vendor.json"))
    assert vendor["summary"]["by_rule"] == {"name_order": 4} and vendor["summary"]["unmatched_rows"] == 1
    assert vendor["raw_inputs"] == ["run.ixkn-rep"]
    assert vendor["metric_rows"] == 5 * 5 and len(vendor["malformed_lines"]) == 1
    assert {m["level"] for m in vendor["messages"]} == {"INF", "WRN"}
    meta = json.load(open(workdir / "run.meta.json"))
    assert meta["time_source"] == "host" and meta["backend"] == "tianshu"
    assert meta["vendor_rows_matched"] == 4 and meta["vendor_rows_unmatched"] == 1
    assert len(meta["ixkn_messages"]) == 6  # INF + WRN on the first launch of each of 3 kernel names
    assert "1 unmatched" in done.stderr


def test_report_only_ixkn_is_reimported(workdir):
    done = _run(workdir, "--ixkn-section", "SpeedOfLight")
    assert done.returncode == 0, done.stderr
    assert os.path.isfile(workdir / "run.ixkn-rep")
    kernels, _ = _kernels(workdir)
    assert kernels["add_kernel"]["tianshu.gpu_speed_of_light.duration (usecond)"] == pytest.approx(1.5 + 3.5 + 4.5)
    vendor = json.load(open(workdir / "run.vendor.json"))
    assert vendor["raw_inputs"] == ["run.ixkn-rep"]


def test_vendor_metrics_choose_sections_and_skip_shifts_name_order(workdir):
    done = _run(workdir, "-m", "vendor_metrics=instruction", "--ixkn-kernel-name", "add_kernel",
                "--ixkn-launch-skip", "1")
    assert done.returncode == 0, done.stderr
    kernels, _ = _kernels(workdir)
    # ixKN skipped the first add_kernel launch and profiled the next two (its kernels 1 and 2), which
    # are the session's launches 1 and 2 (0-based, all kernels: add, add, add, copy).
    assert kernels["add_kernel"]["tianshu.instruction_statistics.executed_instructions (inst)"] == pytest.approx(3000)
    assert "tianshu.instruction_statistics.executed_instructions (inst)" not in kernels["copy_kernel"]
    vendor = json.load(open(workdir / "run.vendor.json"))
    assert [a["runtime_event"]["launch_index"] for a in vendor["associations"]] == [1, 2]


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signals_write_profile_and_exit_as_the_plain_command(workdir, signum, code):
    # The child gets Ctrl-C as a foreground process would, even when pytest runs in the background
    # (which starts it with SIGINT ignored, and an ignored signal stays ignored across exec).
    child = subprocess.Popen(_command(target_args=("wait",)), cwd=workdir, env=_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while not os.path.exists(workdir / "ready") and time.time() < deadline:
        time.sleep(0.1)
    child.send_signal(signum)
    out, err = child.communicate(timeout=120)
    assert child.returncode == code, err
    kernels, _ = _kernels(workdir)
    assert "tianshu.launch_statistics.grid_size" in kernels["add_kernel"]


def test_trace_events_get_the_metrics(workdir):
    done = _run(workdir, "-d", "trace")
    assert done.returncode == 0, done.stderr
    events = json.load(open(workdir / "run.chrome_trace"))["traceEvents"]
    adds = sorted(e["args"]["tianshu.launch_statistics.grid_size"] for e in events
                  if e.get("ph") == "X" and e.get("name") == "add_kernel" and "correlation" in e.get("args", {}))
    assert adds == [2, 6, 8]  # one event per launch, each with its own launch's row


def test_rows_are_kept_when_the_child_wrote_no_profile(workdir):
    assert _run(workdir).returncode == 0
    old = time.time() - 3600
    for leftover in ("run.hatchet", "run.launches.json"):  # a previous run's files must not be used
        os.utime(workdir / leftover, (old, old))
    done = _run(workdir, FLAGTREE_PROFILER_DISABLE="1")
    assert done.returncode == 0, done.stderr
    vendor = json.load(open(workdir / "run.vendor.json"))
    assert vendor["summary"]["rows"] == 5 and vendor["summary"]["unmatched_rows"] == 5
    assert any("no launch log" in r for r in vendor["degrade_reasons"])
    assert any("was not written" in r for r in vendor["degrade_reasons"])
    assert "5 unmatched" in done.stderr


@pytest.mark.parametrize("options, message", [
    (("-b", "nvidia"), "backend tianshu"),
    (("--ixkn-cli", "/nonexistent/ixkn-cli"), "does not exist"),
    (("-m", "vendor_metrics=aicore"), "unknown vendor metric"),
])
def test_contradictions_are_usage_errors(workdir, options, message):
    done = _run(workdir, *options)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not os.path.exists(workdir / "run.hatchet")


def test_ixkn_options_need_ixkn_and_a_target(workdir):
    done = subprocess.run([sys.executable, "-m", "flagtree.profiler.cli", "--ixkn-section", "Occupancy", "target.py"],
                          cwd=workdir, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "needs --ixkn" in done.stderr
    done = subprocess.run([sys.executable, "-m", "flagtree.profiler.cli", "--ixkn"], cwd=workdir, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no script to run" in done.stderr


def test_sections_go_to_ixkn_as_one_list_of_identifiers(workdir):
    done = _run(workdir, "-m", "vendor_metrics=launch_stats,occupancy,memory")
    assert done.returncode == 0, done.stderr
    kernels, _ = _kernels(workdir)
    add = kernels["add_kernel"]
    assert "tianshu.launch_statistics.grid_size" in add and "tianshu.occupancy.achieved_occupancy (%)" in add
    assert "tianshu.memory_access.memory_throughput (Gbyte/second)" in add
    # Display names given to --ixkn-section are translated; repeated values make one list.
    done = _run(workdir, "--ixkn-section", "Launch Statistics", "--ixkn-section", "Instruction")
    assert done.returncode == 0, done.stderr
    kernels, _ = _kernels(workdir)
    assert "tianshu.instruction_statistics.executed_instructions (inst)" in kernels["add_kernel"]
    assert "tianshu.occupancy.achieved_occupancy (%)" not in kernels["add_kernel"]


def test_a_virtualenv_keeps_its_packages_under_ixkn(workdir, tmp_path):
    # A real venv (its python a symlink to the base interpreter) holding a module the target needs;
    # ixkn-cli runs the resolved interpreter, which does not see the venv's site-packages.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert os.path.realpath(python) != str(python) and site.startswith(str(venv))
    with open(os.path.join(site, "venv_only_module.py"), "w") as f:
        f.write("VALUE = 'from the venv'\n")
    (workdir / "target.py").write_text("import venv_only_module\n" + TARGET.format(tests=os.path.join(ROOT, "tests")))
    command = [str(python), *_command()[1:]]
    done = subprocess.run(command, cwd=workdir, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    kernels, _ = _kernels(workdir)
    assert kernels["add_kernel"]["count"] == 3 and "tianshu.launch_statistics.grid_size" in kernels["add_kernel"]
