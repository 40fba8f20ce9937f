"""Seeded fuzz: mutated profiles and options never give a traceback.

Every run must end with exit status 0, or 2 with exactly one `error:` line on stderr and
nothing on stdout. The viewer runs in-process through main() with captured streams (fast),
plus a few real subprocess runs of the same inputs.
"""

import io
import json
import os
import random
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

from flagtree.profiler.viewer.cli import main
from viewer_helpers import FIXTURES, H100

SEED = 20261201
CASES = 600
PREFIX = "flagtree-profiler-viewer: error: "
from support.package_path import PACKAGE_ROOT as SRC  # noqa: E402  (the imported build, src/ or site-packages)

ODD_VALUES = ["NaN", "Infinity", "-Infinity", "-1", "0", "1e400", "1" + "0" * 320, "1" + "0" * 5000,
              "-0.0", "true", "null", '"x"', '"\\u001b[2J"', "[]", "{}", '"\\ud800"', "1.5",
              "[" * 3000 + "]" * 3000]
OPTION_SETS = [
    [], ["-m", "time/ms,count"], ["-m", "time/%,avg_time/us"], ["-m", "util"],
    ["-m", "tflop16/s,gbyte/s,flop/s"], ["--print-sorted"], ["-l"], ["-d", "1"], ["-t", "0.2"],
    ["-i", "k"], ["-e", "s"], ["-f", "function_line"], ["-f", "file:function"],
    ["--show-metadata", "-m", "count"], ["-m", "cycles,cpu_time/us"], ["-m", "count", "-d", "0"],
]


def _seed_texts():
    texts = [p.read_text() for p in sorted(FIXTURES.glob("*.hatchet"))]
    kernel = {"frame": {"name": "k", "kind": "kernel"}, "children": [],
              "metrics": {"time (ns)": 10, "count": 1, "device_id": 0, "device_type": 1,
                          "flops16": 5, "bytes": 7}}
    scope = {"frame": {"name": "s"}, "metrics": {"cpu_time (ns)": 3}, "children": [kernel]}
    meta = {"frame": {"name": "__launch_metadata"}, "metrics": {"cpu_time (ns)": 1}, "children": []}
    texts.append(json.dumps([{"frame": {"name": "ROOT"}, "metrics": {}, "children": [scope, meta]}, H100]))
    return texts


def _mutate(rng, text):
    """One to three random edits of the text: structural, numeric or byte-level."""
    for _ in range(1 if rng.random() < 0.7 else rng.randint(2, 3)):
        # Value-level edits are likelier, so that many inputs still parse and get shown.
        kind = rng.choices(range(8), weights=(1, 1, 1, 5, 1, 4, 1, 1))[0]
        at = rng.randrange(len(text) + 1)
        if kind == 5:
            quotes = [i for i, c in enumerate(text) if c == '"']
            at = rng.choice(quotes) + 1 if quotes else at
        if kind == 0:  # truncate
            text = text[:at]
        elif kind == 1:  # drop a span
            text = text[:at] + text[at + rng.randint(1, 40):]
        elif kind == 2:  # duplicate a span
            text = text[:at] + text[at:at + rng.randint(1, 200)] * 2 + text[at + 200:]
        elif kind == 3:  # replace a number with an odd value
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = rng.choice(digits)
                j = i
                while j < len(text) and (text[j].isdigit() or text[j] in ".e-+"):
                    j += 1
                text = text[:i] + rng.choice(ODD_VALUES) + text[j:]
        elif kind == 4:  # a structural character
            text = text[:at] + rng.choice('{}[],:"\\') + text[at:]
        elif kind == 5:  # a control or odd character inside a string
            text = text[:at] + rng.choice(["\\u0007", "\\n", "\\u202e", "\x1b", "\u00e9", "\\"]) + text[at:]
        elif kind == 6:  # nest deeper
            text = text[:at] + '{"frame": {"name": "d"}, "children": [' * rng.randint(1, 5) + text[at:]
        else:  # a random byte
            text = text[:at] + chr(rng.randrange(0, 256)) + text[at + 1:]
    return text


def _check(status, out, err, where):
    assert status in (0, 2), where
    assert "Traceback" not in err, where
    if status == 2:
        assert out == "" and err.count("\n") == 1 and err.startswith(PREFIX), (where, err)
    else:
        assert err == "", (where, err)


def _cases(tmp_path):
    rng = random.Random(SEED)
    seeds = _seed_texts()
    for index in range(CASES):
        path = tmp_path / f"case{index % 8}.hatchet"
        path.write_bytes(_mutate(rng, rng.choice(seeds)).encode("utf-8", "surrogateescape"))
        yield index, str(path), rng.choice(OPTION_SETS)


def test_fuzz_in_process(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    outcomes = {0: 0, 2: 0}
    for index, path, options in _cases(tmp_path):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            status = main([*options, path])
        _check(status, out.getvalue(), err.getvalue(), (index, options))
        outcomes[status] += 1
    # The mutations must exercise both outcomes, or the test proves little.
    assert outcomes[0] > 50 and outcomes[2] > 50, outcomes


def test_fuzz_subprocess_sample(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    for index, path, options in _cases(tmp_path):
        if index % 100:
            continue
        done = subprocess.run([sys.executable, "-m", "flagtree.profiler.viewer", *options, path],
                              capture_output=True, text=True, env=env, check=False,
                              errors="backslashreplace")
        _check(done.returncode, done.stdout, done.stderr, (index, options))
