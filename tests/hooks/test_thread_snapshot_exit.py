"""A thread started in a session still running at interpreter exit (a daemon, or the periodic
parts' timer) leaves nothing of ours behind: nanobind reports no leaked ContextSnapshot."""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import threading, time
    import flagtree.profiler as profiler
    profiler.start(sys.argv[1], backend="interpreter")
    with profiler.scope("s"):
        threading.Thread(target=time.sleep, args=(100,), daemon=True).start()
        time.sleep(0.3)  # a periodic part or two
    profiler.finalize()
''')


def test_no_snapshot_is_reported_leaked_at_exit(tmp_path):
    script = tmp_path / "run.py"
    script.write_text("import sys\n" + SCRIPT)
    env = dict(os.environ, TRITON_INTERPRET="1", FLAGTREE_PROFILER_PERIODIC_S="0.1")
    result = subprocess.run([sys.executable, str(script), str(tmp_path / "p")], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "leaked" not in result.stderr, result.stderr
    assert any(name.startswith("p.part") for name in os.listdir(tmp_path))  # the timer ran
