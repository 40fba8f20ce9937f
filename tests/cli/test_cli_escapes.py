"""What flagtree-profiler prints names the profile and paths the user chose: their control
characters reach the terminal escaped, never as the codes themselves."""
import os
import subprocess
import sys

from flagtree.profiler import cli

HOSTILE = "x\x1b]0;pwned\x07\u009b\u0085\u202e"
SHOWN = "x\\x1b]0;pwned\\x07\\x9b\\x85\\u202e"


def test_the_wrote_line_escapes_a_name_given_with_dash_n(tmp_path):
    (tmp_path / "script.py").write_text("import flagtree.profiler as p\nwith p.scope('s', {'bytes': 1}):\n    pass\n")
    result = subprocess.run([sys.executable, "-m", "flagtree.profiler", "-b", "interpreter", "-n", HOSTILE,
                             "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, TRITON_INTERPRET="1"))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == f"flagtree-profiler: wrote {SHOWN}.hatchet"
    assert not any(c in result.stderr for c in "\x1b\x07\u009b\u0085\u202e")
    assert (tmp_path / f"{HOSTILE}.hatchet").exists()  # the file keeps the name it was given


def test_errors_naming_what_the_user_gave_are_escaped(capsys, tmp_path):
    assert cli.main([str(tmp_path / f"{HOSTILE}.py")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and not any(c in err for c in "\x1b\x07\u009b\u0085\u202e")
    assert cli.main(["--module", HOSTILE]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and not any(c in err for c in "\x1b\x07\u009b\u0085\u202e"), err
