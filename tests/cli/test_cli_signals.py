"""Signals while flagtree-profiler writes the profile: a second Ctrl-C or a SIGTERM abandons what
is left of the write, leaves no temporary file, says in one line what was and was not written and
exits 130 / 143. Real signals, sent to a subprocess by itself at chosen points of the write."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

# Run in the subprocess: wraps one step of the write so that it sends the signal first.
DRIVER = textwrap.dedent('''
    import os, signal, sys, threading
    from flagtree.profiler import cli, session_outputs
    signum, where = getattr(signal, sys.argv[1]), sys.argv[2]
    # A pytest started in the background passes SIGINT on ignored; a terminal's Ctrl-C reaches a
    # foreground process, whose Python turns it into KeyboardInterrupt: this driver is that process.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def send():
        os.kill(os.getpid(), signum)

    if where == "profile":  # before the profile's (native) writer starts
        real_profile = session_outputs.write_profile
        def write_profile(*args, **kwargs):
            send()
            return real_profile(*args, **kwargs)
        session_outputs.write_profile = write_profile
    elif where == "metadata":  # the metadata's temporary file exists and holds its text
        real_replace = os.replace
        def replace(src, dst):
            send()
            return real_replace(src, dst)
        os.replace = replace
    elif where == "after":  # the native writer has put the profile in place; the session has not noted it
        real_profile = session_outputs.write_profile
        def write_profile(*args, **kwargs):
            real_profile(*args, **kwargs)
            send()
        session_outputs.write_profile = write_profile
    else:  # from another thread, while the native writer runs (or just after it)
        real_profile = session_outputs.write_profile
        def write_profile(*args, **kwargs):
            threading.Thread(target=send).start()
            return real_profile(*args, **kwargs)
        session_outputs.write_profile = write_profile
    sys.exit(cli.main(["-b", "interpreter", "-n", "prof", "script.py"]))
''')

SCRIPT = textwrap.dedent('''
    import os, signal, sys
    import flagtree.profiler as profiler
    with profiler.scope("work", {"bytes": 8}):
        pass
    if sys.argv[1:] == ["ctrl-c"]:  # the first Ctrl-C ends the script
        os.kill(os.getpid(), signal.SIGINT)
''')


def run_driver(tmp_path, signame, where):
    (tmp_path / "script.py").write_text(SCRIPT)
    (tmp_path / "driver.py").write_text(DRIVER)
    env = dict(os.environ, TRITON_INTERPRET="1")
    return subprocess.run([sys.executable, "driver.py", signame, where], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def our_lines(result):
    return [line for line in result.stderr.splitlines() if line.startswith("flagtree-profiler: ")
            and "interpreter" not in line]


def leftovers(tmp_path):
    return sorted(n for n in os.listdir(tmp_path) if n.endswith(".tmp"))


def test_a_second_ctrl_c_before_the_profile_is_written_writes_nothing_and_exits_130(tmp_path):
    (tmp_path / "prof.meta.json").write_text("{}")  # an earlier run's: removed before the write
    result = run_driver(tmp_path, "SIGINT", "profile")
    assert result.returncode == 130, result.stderr
    assert our_lines(result) == [
        "flagtree-profiler: Ctrl-C while the profile was written: the rest of the write was abandoned; "
        "wrote nothing; not written: prof.hatchet, prof.meta.json"]
    assert "Traceback" not in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["driver.py", "script.py"]


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_signal_while_the_metadata_is_written_keeps_the_profile_and_removes_the_temporary(tmp_path, signame):
    result = run_driver(tmp_path, signame, "metadata")
    assert result.returncode == 128 + getattr(signal, signame), result.stderr
    what = "SIGTERM" if signame == "SIGTERM" else "Ctrl-C"
    assert our_lines(result) == [
        f"flagtree-profiler: {what} while the profile was written: the rest of the write was abandoned; "
        "wrote prof.hatchet; not written: prof.meta.json"]
    assert leftovers(tmp_path) == [] and not (tmp_path / "prof.meta.json").exists()
    root = json.loads((tmp_path / "prof.hatchet").read_text())[0]
    assert [c["frame"]["name"] for c in root["children"]] == ["work"]


def test_the_first_ctrl_c_ends_the_script_and_a_second_one_the_write(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT)
    (tmp_path / "driver.py").write_text(DRIVER.replace('"script.py"]', '"script.py", "ctrl-c"]'))
    result = subprocess.run([sys.executable, "driver.py", "SIGINT", "metadata"], cwd=tmp_path,
                            env=dict(os.environ, TRITON_INTERPRET="1"), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 130, result.stderr
    lines = result.stderr.splitlines()
    # the script's own KeyboardInterrupt is reported as Python reports it; then one line of ours
    assert lines[lines.index("KeyboardInterrupt") + 1:] == [
        "flagtree-profiler: Ctrl-C while the profile was written: the rest of the write was abandoned; "
        "wrote prof.hatchet; not written: prof.meta.json"]
    assert leftovers(tmp_path) == []


def test_sigterm_during_the_native_write_leaves_whole_files_only(tmp_path):
    result = run_driver(tmp_path, "SIGTERM", "thread")
    assert result.returncode == 143, result.stderr
    (line,) = our_lines(result)
    assert line.startswith("flagtree-profiler: SIGTERM while the profile was written"), line
    assert line.endswith("prof.meta.json") and not (tmp_path / "prof.meta.json").exists()
    assert leftovers(tmp_path) == [] and "Traceback" not in result.stderr
    # the handler runs before the native writer starts or once it has finished: all or nothing
    if "wrote prof.hatchet" in line:
        json.loads((tmp_path / "prof.hatchet").read_text())
    else:
        assert "not written: prof.hatchet" in line and not (tmp_path / "prof.hatchet").exists()


@pytest.mark.parametrize("earlier", [False, True])
def test_a_signal_just_after_the_native_write_says_the_profile_is_on_disk(tmp_path, earlier):
    if earlier:  # an earlier run's profile: replaced by this write, which the line must tell apart
        (tmp_path / "prof.hatchet").write_text("[]")
    result = run_driver(tmp_path, "SIGINT", "after")
    assert result.returncode == 130, result.stderr
    assert our_lines(result) == [
        "flagtree-profiler: Ctrl-C while the profile was written: the rest of the write was abandoned; "
        "wrote prof.hatchet; not written: prof.meta.json"]
    root = json.loads((tmp_path / "prof.hatchet").read_text())[0]
    assert [c["frame"]["name"] for c in root["children"]] == ["work"]
