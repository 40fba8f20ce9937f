"""The command line at its edges: the interpreter chosen by name, misspelt
modules, --list-metrics errors, `python -m flagtree.profiler`, the "wrote" line with parts,
pytest's frames under -c python, the script's own bad start() calls, a signal before the session
exists, and the package without numpy. Subprocess runs cost seconds each, so each checks several
things; usage errors are checked in process."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from flagtree.profiler import _native
from flagtree.profiler.cli import command as cli
from test_cli import KERNEL, kernel_count, kernel_nodes, seen

SRC = os.path.dirname(os.path.dirname(os.path.dirname(_native.__file__)))  # the folder holding flagtree/

SCRIPT = KERNEL + textwrap.dedent('''
    import json, os, sys
    import flagtree.profiler as profiler
    print("SEEN " + json.dumps({"interpret": os.environ.get("TRITON_INTERPRET")}), flush=True)
    launch(2)
    if "parts" in sys.argv:
        profiler.flush_part()
        launch(1)
        profiler.flush_part()
        launch(1)
    if "bad_start" in sys.argv:
        for call in (lambda: profiler.start(123), lambda: profiler.start(context="stack"),
                     lambda: profiler.start(mode="metrics"),  # no backend named: the mode is not judged
                     lambda: profiler.start(backend="interpreter", mode="fast")):
            try:
                call()
            except (TypeError, ValueError) as error:
                print("ERROR " + type(error).__name__ + ": " + str(error), flush=True)
''')


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli_startup")
    (path / "work.py").write_text(SCRIPT)
    (path / "test_tiny.py").write_text(KERNEL + "\n\ndef test_launches():\n    launch(3)\n")
    return path


def run(workdir, *args, env=None, module="flagtree.profiler"):
    full = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "FLAGTREE_PROFILER_BACKEND")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", module, *args], cwd=workdir, env=full, capture_output=True,
                          text=True, timeout=180)


@pytest.mark.parametrize("how", ["option", "environment"])
def test_choosing_the_interpreter_sets_triton_interpret(workdir, how):
    if how == "option":
        result = run(workdir, "-b", "interpreter", "-n", f"interp_{how}", "work.py")
    else:
        result = run(workdir, "-n", f"interp_{how}", "work.py", env={"FLAGTREE_PROFILER_BACKEND": "interpreter"})
    assert result.returncode == 0, result.stderr
    assert seen(result)["interpret"] == "1"
    assert kernel_count(workdir / f"interp_{how}.hatchet") == 2
    assert ("flagtree-profiler: backend interpreter: TRITON_INTERPRET=1 was set for the script; kernel times "
            "are host-measured") in result.stderr.splitlines()


def test_python_dash_m_package_runs_the_command_and_the_wrote_line_names_the_parts(workdir):
    result = run(workdir, "-n", "parted", "work.py", "parts")  # python -m flagtree.profiler
    assert result.returncode == 0, result.stderr
    parts = [f"parted.part{k}.hatchet" for k in (1, 2, 3)]
    assert all((workdir / p).exists() for p in parts) and not (workdir / "parted.hatchet").exists()
    assert result.stderr.splitlines()[-1] == (
        "flagtree-profiler: wrote 3 parts, parted.part1.hatchet to parted.part3.hatchet; view them merged: "
        "flagtree-profiler-viewer parted.part*.hatchet")
    assert sum(kernel_count(workdir / p) for p in parts) == 4
    assert json.loads((workdir / "parted.meta.json").read_text())["parts"] == parts


def test_the_scripts_bad_start_calls_are_errors_under_the_command(workdir):
    result = run(workdir, "-n", "bad", "work.py", "bad_start")
    assert result.returncode == 0, result.stderr
    errors = [line for line in result.stdout.splitlines() if line.startswith("ERROR ")]
    assert errors == ["ERROR TypeError: flagtree.profiler.start: name must be a path string (the output path "
                      "without extension), got 123 (int)",
                      "ERROR ValueError: unknown context 'stack'; supported: shadow, python",
                      "ERROR ValueError: backend 'interpreter' does not support mode 'fast'; supported modes: "
                      "none yet (leave mode unset)"]
    assert kernel_count(workdir / "bad.hatchet") == 2


@pytest.mark.parametrize("keep", [False, True])
def test_pytest_frames_are_folded_under_python_context(workdir, keep):
    name = f"frames_{keep}"
    args = ["--keep-pytest-frames"] if keep else []
    result = run(workdir, "-c", "python", "-n", name, *args, "pytest", "-q", "-p", "no:cacheprovider",
                 "test_tiny.py", env={"TRITON_INTERPRET": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    root = json.loads((workdir / f"{name}.hatchet").read_text())[0]
    (path, node), = kernel_nodes(root)
    assert node["metrics"]["count"] == 3
    frames = path[1:-1]
    pytest_frames = [f for f in frames if "/_pytest/" in f or "/pluggy/" in f]
    assert bool(pytest_frames) == keep, frames
    assert [f.rsplit("@", 1)[1] for f in frames if "test_tiny.py" in f] == ["test_launches", "launch"]
    if not keep:
        assert all("test_tiny.py" in f for f in frames), frames


def test_a_signal_before_the_session_exists_exits_143_and_writes_nothing(workdir, tmp_path):
    driver = textwrap.dedent(f'''
        import os, signal, sys, time
        from flagtree.profiler import session
        from flagtree.profiler.cli import command as cli
        def slow_start(**options):  # SIGTERM arrives while the session is being started
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        session.start_command_session = slow_start
        sys.exit(cli.main(["-n", "never", {str(workdir / "work.py")!r}]))
    ''')
    result = subprocess.run([sys.executable, "-c", driver], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env=dict(os.environ, TRITON_INTERPRET="1"))
    assert result.returncode == 128 + signal.SIGTERM, result.stderr
    assert result.stderr.splitlines() == [
        "flagtree-profiler: interrupted before the profiling session started; no profile was written"]
    assert os.listdir(tmp_path) == [] and "SEEN" not in result.stdout


def test_ctrl_c_before_the_session_exists_exits_130(capsys, monkeypatch, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("raise SystemExit('must not run')\n")

    def interrupted(**options):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli._session, "start_command_session", interrupted)
    assert cli.main(["-n", str(tmp_path / "never"), str(script)]) == 130
    assert capsys.readouterr().err.splitlines() == [
        "flagtree-profiler: interrupted before the profiling session started; no profile was written"]
    assert os.listdir(tmp_path) == ["s.py"]


@pytest.mark.parametrize("module, message", [
    ("no.such.mod", "no module named 'no.such.mod'"),
    ("nosuchmodule_at_all", "no module named 'nosuchmodule_at_all'"),
    ("json", "'json' is a package without a __main__ module; it cannot be run"),
])
def test_a_module_that_cannot_run_is_one_line_and_status_2(capsys, monkeypatch, tmp_path, module, message):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--module", module, "--flag"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"flagtree-profiler: error: {message}\n"
    assert os.listdir(tmp_path) == []


def test_list_metrics_errors_have_one_prefix_and_status_2(capsys):
    assert cli.main(["--list-metrics", "--chip", "NO_SUCH_CHIP"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("flagtree-profiler: error: ")
    assert captured.err.count("error:") == 1 and "flagtree.profiler:" not in captured.err
    if not _native.nvidia.cuda_driver_version():
        assert "needs the CUDA driver (libcuda.so.1), which this machine lacks" in captured.err
        assert "even for a named chip" in captured.err


def test_the_package_imports_and_its_commands_answer_without_numpy(tmp_path):
    """A venv without site packages, holding only this package's source and its built module."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    package = tmp_path / "path"
    shutil.copytree(os.path.join(SRC, "flagtree"), package / "flagtree",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(package), "HOME": str(tmp_path)}
    # dev/asan_tests.sh: the sanitized module loads only with the sanitizer preloaded
    env.update({k: os.environ[k] for k in ("LD_PRELOAD", "ASAN_OPTIONS") if k in os.environ})

    def call(*args):
        return subprocess.run([python, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    probe = call("-c", "import importlib.util as u; print([m for m in ('numpy', 'torch', 'triton') if u.find_spec(m)])")
    assert probe.returncode == 0 and probe.stdout.strip() == "[]", probe.stderr
    imported = call("-c", "import flagtree.profiler as p; print(sorted(p.available_backends()))")
    assert imported.returncode == 0, imported.stderr
    assert "interpreter" in imported.stdout
    helped = call("-m", "flagtree.profiler", "--help")
    assert helped.returncode == 0 and "--module MODULE" in helped.stdout, helped.stderr
    viewer = call("-m", "flagtree.profiler.viewer", "--help")
    assert viewer.returncode == 0, viewer.stderr
    missing = call("-m", "flagtree.profiler", "-b", "no_such_backend", "x.py")
    assert missing.returncode == 2 and missing.stderr.startswith("flagtree-profiler: error: "), missing.stderr
    assert "Traceback" not in helped.stderr + viewer.stderr + missing.stderr
