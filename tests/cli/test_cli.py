"""Tests of the `flagtree-profiler` command: it runs real Triton kernels (interpreter mode) in
small scripts written to tmp_path, as a subprocess, and checks the profile, the exit status and
what the script saw. Each subprocess costs seconds (torch + triton imports), so each run is
checked for several things at once; option errors are checked in-process."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from flagtree.profiler import KNOWN_BACKENDS
from flagtree.profiler.cli import command as cli
from flagtree.profiler.cli import extension, interpret, options as cli_options

# The script under test: launches 2 kernels inside a scope, calls the profiler's own
# start()/finalize() (which must defer to the command's session), reports what it saw, then ends
# the way argv[1] says, launching 5 more kernels where the ending lets it continue.
KERNEL = textwrap.dedent('''
    import torch, triton, triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)

    def launch(count):
        x, y = torch.rand(64), torch.rand(64)
        out = torch.empty_like(x)
        for _ in range(count):
            add_kernel[(1,)](x, y, out, 64, BLOCK=64)
''')

SCRIPT = KERNEL + textwrap.dedent('''
    import json, os, signal, sys
    import flagtree.profiler as profiler

    def fail():
        raise RuntimeError("boom from the script")

    ending = sys.argv[1]
    profiler.start("ignored_by_the_command")
    with profiler.scope("work"):
        launch(2)
    profiler.finalize()
    seen = {"argv": sys.argv, "name": __name__, "file": __file__, "path0": sys.path[0],
            "interpret": os.environ.get("TRITON_INTERPRET")}
    print("SEEN " + json.dumps(seen), flush=True)
    if ending == "exit3":
        sys.exit(3)
    if ending == "raise":
        fail()
    if ending == "interrupt":
        raise KeyboardInterrupt
    if ending == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
    launch(5)
''')


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli")
    (path / "work.py").write_text(SCRIPT)
    return path


def run_cli(workdir, *args, interpret="1"):
    env = dict(os.environ, PYTHONWARNINGS="default")
    env.pop("TRITON_INTERPRET", None)
    if interpret is not None:
        env["TRITON_INTERPRET"] = interpret
    return subprocess.run([sys.executable, "-m", "flagtree.profiler.cli", *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=120)


def seen(result):
    line = next(line for line in result.stdout.splitlines() if line.startswith("SEEN "))
    return json.loads(line[len("SEEN "):])


def kernel_nodes(node, path=()):
    """(frame names from the root, node) of every kernel node of a tree profile."""
    here = path + (node["frame"]["name"],)
    if node["frame"].get("kind") == "kernel":
        yield here, node
    for child in node["children"]:
        yield from kernel_nodes(child, here)


def kernel_count(profile_path):
    root, device_info = json.loads(profile_path.read_text())
    assert "CPU" in device_info
    return sum(node["metrics"]["count"] for _, node in kernel_nodes(root))


def test_normal_run_sees_what_python_gives_and_writes_the_profile(workdir):
    result = run_cli(workdir, "-n", "normal", "work.py", "normal", "-n", "--data", "x")
    assert result.returncode == 0, result.stderr
    assert seen(result) == {"argv": ["work.py", "normal", "-n", "--data", "x"], "name": "__main__",
                            "file": str(workdir / "work.py"), "path0": str(workdir), "interpret": "1"}
    root = json.loads((workdir / "normal.hatchet").read_text())[0]
    counts = {path: node["metrics"]["count"] for path, node in kernel_nodes(root)}
    assert counts == {("ROOT", "work", "add_kernel"): 2, ("ROOT", "add_kernel"): 5}
    assert not (workdir / "ignored_by_the_command.hatchet").exists()
    meta = json.loads((workdir / "normal.meta.json").read_text())
    assert meta["backend"] == "interpreter" and meta["kernel_records"] == 7
    assert meta["command_line"][1:] == ["-n", "normal", "work.py", "normal", "-n", "--data", "x"]
    # The script's start() and finalize() change nothing and are noted once, not as warnings.
    notes = [line for line in result.stderr.splitlines() if "defer to the command's session" in line]
    assert notes == ["flagtree-profiler: note: the script's own start() and finalize() defer to the command's "
                     "session, which writes one profile for the whole run when the command ends"]
    assert "UserWarning" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[-1] == "flagtree-profiler: wrote normal.hatchet"
    assert any(line.startswith("flagtree-profiler: ") and "interpreter" in line for line in lines)


def test_sys_exit_code_passes_through_and_python_context_names_the_script(workdir):
    result = run_cli(workdir, "-c", "python", "work.py", "exit3")
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    root = json.loads((workdir / "work.hatchet").read_text())[0]
    (path, node), = kernel_nodes(root)
    assert node["metrics"]["count"] == 2
    script = str(workdir / "work.py")
    # `python -m flagtree.profiler.cli` itself runs under runpy, whose frames sit above main().
    frames = [name for name in path[1:-1] if not name.startswith("<frozen runpy>")]
    assert [frame.rsplit("@", 1)[1] for frame in frames] == ["<module>", "launch"]
    for frame in frames:
        file, line = frame.rsplit("@", 1)[0].rsplit(":", 1)
        assert file == script and int(line) > 0


def test_exception_exits_1_with_pythons_traceback_and_trace_output(workdir):
    result = run_cli(workdir, "-d", "trace", "-n", "raised", "work.py", "raise")
    assert result.returncode == 1
    # As Python prints it: from the script's first frame, none of the command's own frames.
    traceback = result.stderr[result.stderr.index("Traceback (most recent call last):"):]
    assert traceback.splitlines()[1].startswith(f'  File "{workdir / "work.py"}", line ')
    assert "cli.py" not in traceback and "RuntimeError: boom from the script" in traceback
    assert result.stderr.splitlines()[-1] == "flagtree-profiler: wrote raised.chrome_trace"
    trace = json.loads((workdir / "raised.chrome_trace").read_text())
    kernels = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    assert [e["name"] for e in kernels] == ["add_kernel"] * 2
    assert trace["otherData"]["kernel_records"] == 2


@pytest.mark.parametrize("ending, status", [("sigterm", 143), ("interrupt", 130)])
def test_signals_and_interrupts_still_write_the_profile(workdir, ending, status):
    result = run_cli(workdir, "-n", ending, "work.py", ending)
    assert result.returncode == status, result.stderr
    # Only the kernels launched before the signal: the handler unwinds the script at once.
    assert kernel_count(workdir / f"{ending}.hatchet") == 2
    assert result.stderr.splitlines()[-1] == f"flagtree-profiler: wrote {ending}.hatchet"
    assert ("KeyboardInterrupt" in result.stderr) == (ending == "interrupt")


def test_pytest_form_runs_the_tests_in_process(workdir):
    (workdir / "test_tiny.py").write_text(KERNEL + "\n\ndef test_launches():\n    launch(3)\n\n\n"
                                          "def test_more():\n    launch(2)\n")
    result = run_cli(workdir, "pytest", "-q", "-p", "no:cacheprovider", "test_tiny.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert kernel_count(workdir / "pytest.hatchet") == 5
    # In the default (shadow) context each test's kernels sit under a scope named by its node id.
    root = json.loads((workdir / "pytest.hatchet").read_text())[0]
    counts = {path[1:-1]: node["metrics"]["count"] for path, node in kernel_nodes(root)}
    assert counts == {("test_tiny.py::test_launches",): 3, ("test_tiny.py::test_more",): 2}
    assert result.stderr.splitlines()[-1] == "flagtree-profiler: wrote pytest.hatchet"


def test_bad_option_in_a_real_process_is_one_line_and_status_2(workdir):
    result = run_cli(workdir, "-b", "no_such_backend", "work.py", "normal")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "flagtree-profiler: error: unknown backend 'no_such_backend'; known backends: "
        + ", ".join(KNOWN_BACKENDS)]
    assert "SEEN" not in result.stdout and not (workdir / "no_such_backend.hatchet").exists()
    script = shutil.which("flagtree-profiler")
    if script:  # the console script declared in pyproject.toml reaches the same main()
        result = subprocess.run([script, "work.py"], cwd=workdir / "..", capture_output=True, text=True)
        assert result.returncode == 2
        assert result.stderr == "flagtree-profiler: error: can't open file 'work.py': no such file\n"


def test_module_form_runs_like_python_dash_m(workdir):
    result = run_cli(workdir, "-n", "module", "--module", "work", "exit3", "--flag")
    assert result.returncode == 3, result.stderr
    assert seen(result) == {"argv": [str(workdir / "work.py"), "exit3", "--flag"], "name": "__main__",
                            "file": str(workdir / "work.py"), "path0": str(workdir), "interpret": "1"}
    assert kernel_count(workdir / "module.hatchet") == 2


@pytest.mark.skipif(interpret.gpu_driver_present(), reason="a GPU driver is present: no fallback here")
def test_without_a_gpu_the_command_turns_on_triton_interpreter(workdir):
    result = run_cli(workdir, "-n", "auto", "work.py", "normal", interpret=None)
    assert result.returncode == 0, result.stderr
    assert seen(result)["interpret"] == "1"
    assert kernel_count(workdir / "auto.hatchet") == 7
    # The line says what the command did, not what the user should do.
    assert "flagtree-profiler: no GPU driver found, so TRITON_INTERPRET=1 was set for the script" in result.stderr


@pytest.mark.parametrize("argv, message", [
    (["-c", "stack", "x.py"], "argument -c/--context: invalid choice: 'stack'"),
    (["-d", "csv", "x.py"], "argument -d/--data: unknown data 'csv'; supported: tree, trace, perfetto, or several"),
    (["--bogus", "x.py"], "unrecognized arguments: --bogus"),
    ([], "no script to run"),
    (["missing_script.py", "-n", "x"], "can't open file 'missing_script.py'"),
])
def test_usage_errors_are_one_line_with_status_2(capsys, argv, message):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line, = captured.err.splitlines()
    assert line.startswith("flagtree-profiler: error: ") and message in line


def test_unknown_backend_and_unsupported_mode_are_usage_errors(capsys, tmp_path):
    script = tmp_path / "never_runs.py"
    script.write_text("raise SystemExit('must not run')\n")
    for argv, message in [(["-b", "cuda", str(script)], "unknown backend 'cuda'; known backends: nvidia, cupti"),
                          (["-b", "interpreter", "-m", "fast", str(script)], "does not support mode 'fast'")]:
        assert cli.main(argv) == 2
        line, = capsys.readouterr().err.splitlines()
        assert line.startswith("flagtree-profiler: error: ") and message in line


def test_split_keeps_everything_after_the_target():
    split = cli_options.split
    values = cli_options.VALUE_OPTIONS
    assert split(["-n", "a", "-cpython", "s.py", "-n", "b", "--", "-h"], values) == (
        ["-n", "a", "-cpython"], ["s.py", "-n", "b", "--", "-h"])
    assert split(["--name=a", "--", "-weird.py", "x"], values) == (["--name=a"], ["-weird.py", "x"])
    assert split(["-d", "trace", "--module", "pkg.mod", "-x"], values) == (
        ["-d", "trace", "--module", "pkg.mod"], ["-x"])
    # an extension's option that takes a value is skipped with its value
    assert split(["--chip", "GH100", "s.py"], values | {"--chip"}) == (["--chip", "GH100"], ["s.py"])


def test_two_extensions_asked_for_at_once_are_a_usage_error(capsys, tmp_path):
    script = tmp_path / "never_runs.py"
    script.write_text("raise SystemExit('must not run')\n")
    assert cli.main(["--list-metrics", "--ixkn", str(script)]) == 2
    line, = capsys.readouterr().err.splitlines()
    assert line == "flagtree-profiler: error: --list-metrics cannot be combined with --ixkn"


def test_help_documents_every_option_with_examples(capsys):
    with pytest.raises(SystemExit) as done:
        cli_options.parser(extension.extensions()).parse_args(["-h"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in ("--name", "--backend", "--context", "--data", "--mode", "--hook", "--module", "examples:",
                   "--ixkn", "--list-metrics"):  # the backends' extensions add the last two
        assert option in text
    assert cli.main(["-h"]) == 0
