"""Never a traceback, and nothing from a profile steers the terminal.

Each input here once gave a traceback or printed raw control characters; each must now
give correct output or exactly one escaped `error:` line with exit status 2.
"""

import json
import os
import subprocess
import sys

import pytest

from test_viewer_errors import one_error_line
from viewer_helpers import H100, kernel, node

from support.package_path import PACKAGE_ROOT as SRC  # noqa: E402  (the imported build, src/ or site-packages)
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"


def _no_control(text):
    """No control character other than the newlines between rows."""
    return not any(ord(c) < 32 and c != "\n" or 0x7f <= ord(c) <= 0x9f for c in text)


def test_metric_of_hundreds_of_digits_is_shown_as_a_float(viewer, write_profile):
    big = 10 ** 300
    path = write_profile(f'[{{"frame": {{"name": "ROOT"}}, "metrics": {{}}, "children": ['
                         f'{{"frame": {{"name": "k"}}, "metrics": {{"time (ns)": {big}, "count": {big},'
                         f' "flops16": {big}, "bytes": {big}, "device_id": 0, "device_type": 1}}}}]}},'
                         f' {json.dumps(H100)}]')
    for spec in ("time/ms,count", "avg_time/us,tflop16/s,gbyte/s,util", "time/%"):
        status, out, err = viewer("-m", spec, path)
        assert (status, err) == (0, ""), spec
        assert "k" in out.splitlines()[-1]
    _, out, _ = viewer("-m", "count", path)
    assert out.splitlines()[1].split()[0] == "1.000e+300"


def test_metric_too_large_for_a_float_is_one_error(viewer, write_profile):
    path = write_profile('[{"frame": {"name": "ROOT"}, "metrics": {"count": 1%s}}, {}]' % ("0" * 400))
    assert one_error_line(viewer("-m", "count", path)).endswith(
        "metric 'count' of node 'ROOT' is too large")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1.5", "-1", "1e300", '"x"'])
@pytest.mark.parametrize("key", ["device_id", "device_type"])
def test_bad_device_identifiers_with_util(viewer, write_profile, key, value):
    text = json.dumps([node("ROOT", {}, kernel("k", 1000, flops16=10)), H100])
    path = write_profile(text.replace(f'"{key}": {0 if key == "device_id" else 1}', f'"{key}": {value}'))
    message = one_error_line(viewer("-m", "util", path))
    assert f"metric '{key}' of node 'k' is not a device identifier" in message


def test_integral_float_identifiers_are_accepted(viewer, write_profile):
    text = json.dumps([node("ROOT", {}, kernel("k", 1_000_000, flops16=989_400_000_000)), H100])
    path = write_profile(text.replace('"device_id": 0', '"device_id": 0.0'))
    status, out, _ = viewer("-m", "util", path)
    assert status == 0 and out.splitlines()[-1] == "1.000  `- k"


@pytest.mark.parametrize("pattern", ["a{99999999999}", "(", "a{2,1}", "x" * 3 + "[z-a]"])
def test_bad_regexes(viewer, pattern):
    for option, long in (("-i", "--include"), ("-e", "--exclude")):
        assert one_error_line(viewer(option, pattern, "x.hatchet")).startswith(f"invalid {long} regex")


@pytest.mark.parametrize("meta", [
    "[" * 100000 + "]" * 100000,
    '{"pid": 1, "start_time_ns": 1e999, "stop_time_ns": 5}',
    '{"pid": 1, "start_time_ns": NaN, "stop_time_ns": 5}',
    '{"pid": [], "start_time_ns": 1, "stop_time_ns": 5}',
    '{"pid": 1, "start_time_ns": 1%s, "stop_time_ns": 5}' % ("0" * 5000),
    "\xff\xfe", "[]", "7",
])
def test_odd_meta_json_beside_merged_files(viewer, tmp_path, meta):
    for name in ("a", "b"):
        (tmp_path / f"{name}.hatchet").write_text(json.dumps([node("ROOT", {}, kernel("k", 5)), {}]))
        (tmp_path / f"{name}.meta.json").write_text(meta, errors="surrogateescape")
    status, out, err = viewer("-m", "time/ns", tmp_path / "a.hatchet", tmp_path / "b.hatchet")
    assert (status, err) == (0, "")
    assert out.splitlines()[-1] == "     10  `- k"  # not concurrent: the two files add up


def _hostile_profile(write_profile):
    names = [TITLE, CLEAR, "forged\n999.000  ROOT", "bell\x07", "c1\x9b31m", "rtl\u202eevil", "sur\ud800"]
    kids = [kernel(n, 1000 * (i + 1), **{f"m{CLEAR}": 1}) for i, n in enumerate(names)]
    return write_profile(json.dumps([node("ROOT", {}, node(TITLE, {}, *kids)), H100]))


@pytest.mark.parametrize("options", [[], ["--print-sorted"], ["-l"], ["-f", "function_line"],
                                     ["--no-color", "-m", f"time/ns,m{CLEAR}"]])
def test_names_are_escaped(viewer, write_profile, options):
    path = _hostile_profile(write_profile)
    status, out, err = viewer(*options, path)
    assert (status, err) == (0, "")
    assert _no_control(out)
    assert "\u202e" not in out and "\ud800" not in out
    if "-l" in options:
        assert "  m\\x1b[2J" in out.splitlines()
    else:
        # header (+ ROOT and the scope in the tree) + 7 kernels: no row was forged
        assert len(out.splitlines()) == (8 if options == ["--print-sorted"] else 10)
        assert "\\x1b]0;pwned\\x07" in out and "forged\\x0a999.000  ROOT" in out


def test_escaped_on_a_terminal_too(monkeypatch, write_profile):
    from viewer_helpers import tty_run

    monkeypatch.delenv("NO_COLOR", raising=False)
    status, out = tty_run(monkeypatch, _hostile_profile(write_profile))
    assert status == 0
    assert "\x1b]" not in out and "\x1b[2J" not in out and "\x07" not in out
    assert "\\x1b[2J" in out


@pytest.mark.parametrize("argv", [
    ["-m", f"time/ms,{CLEAR}"], ["-i", f"({TITLE}"], ["-d", f"{CLEAR}"], ["-f", f"{TITLE}"],
    ["--nope\x1b[2J"],
])
def test_error_lines_are_escaped(viewer, write_profile, argv):
    path = write_profile(json.dumps([node("ROOT", {}, kernel("k", 5)), {}]))
    status, out, err = viewer(*argv, path)
    assert status == 2 and out == ""
    assert err.count("flagtree-profiler-viewer: error: ") == 1 and "Traceback" not in err
    assert _no_control(err) and "\\x1b" in err


def test_file_name_with_controls_in_an_error(viewer, tmp_path):
    missing = tmp_path / f"x{CLEAR}\ny.hatchet"
    message = one_error_line(viewer(missing))
    assert "x\\x1b[2J\\x0ay.hatchet" in message


def _subprocess(args, **kwargs):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    return subprocess.run([sys.executable, "-m", "flagtree.profiler.viewer", *args],
                          env=env, check=False, **kwargs)


@pytest.fixture
def big_profile(write_profile):
    kids = [kernel(f"k{i}", i + 1) for i in range(20000)]
    return write_profile(json.dumps([node("ROOT", {}, *kids), {}]))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stdout_is_dev_full(big_profile):
    with open("/dev/full", "w") as full:
        done = _subprocess([big_profile], stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2
    assert done.stderr == "flagtree-profiler-viewer: error: cannot write output: No space left on device\n"


def test_stdout_closed(big_profile):
    done = subprocess.run(f'"{sys.executable}" -m flagtree.profiler.viewer "{big_profile}" >&-',
                          shell=True, env=dict(os.environ, PYTHONPATH=os.path.abspath(SRC)),
                          stderr=subprocess.PIPE, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "error: cannot write output" in done.stderr
    assert "Traceback" not in done.stderr


def test_reader_that_leaves_early(big_profile):
    proc = _subprocess_popen([big_profile])
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read()
    assert proc.wait() == 0 and first.strip() == b"time" and err == b""


def _subprocess_popen(args):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    return subprocess.Popen([sys.executable, "-m", "flagtree.profiler.viewer", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_nul_in_path(viewer):
    assert one_error_line(viewer("a\0b.hatchet")).startswith("cannot read profile")
