"""The streaming reader: chunked reading gives the same tree, and depth costs no recursion."""

import json
import os
import subprocess
import sys

import pytest

from flagtree.profiler.viewer import reader
from flagtree.profiler.viewer.profile_tree import load_profile
from test_viewer_scale import deep_chain_text
from viewer_helpers import FIXTURES, H100, kernel, node

from support.package_path import PACKAGE_ROOT as SRC  # noqa: E402  (the imported build, src/ or site-packages)


def _shape(profile):
    """Every node as (path, kernel flag, metrics), sorted, plus the device_info."""
    rows, stack = [], [(profile.root, ())]
    while stack:
        current, path = stack.pop()
        path = path + (current.name,)
        rows.append((path, current.kernel, sorted(current.metrics.items())))
        stack.extend((child, path) for child in current.children.values())
    return sorted(rows), profile.device_info


def _tricky_profile():
    """Multi-byte names, long numbers, duplicate siblings, odd key order, blank runs."""
    kids = [kernel(f"k\u00e9\u4e2d{i % 7}", 123456789 + i, flops16=10 ** 17 + i) for i in range(300)]
    scope = {"children": kids, "metrics": {"cpu_time (ns)": 12345678901}, "frame": {"name": "s\u00e9"}}
    text = json.dumps([node("ROOT", {}, scope, node("empty")), H100], indent=1)
    return text.replace("\n", "\n" + " " * 40)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
def test_chunked_reading_gives_the_same_tree(tmp_path, monkeypatch, chunk):
    texts = [_tricky_profile(), deep_chain_text(700)] + [p.read_text() for p in FIXTURES.glob("*.hatchet")]
    for index, text in enumerate(texts):
        path = tmp_path / f"p{index}.hatchet"
        path.write_text(text)
        whole = _shape(load_profile(str(path)))
        monkeypatch.setattr(reader, "FIRST_READ", chunk)
        monkeypatch.setattr(reader, "CHUNK", chunk)
        monkeypatch.setattr(reader, "AHEAD", max(1, chunk // 2))
        try:
            assert _shape(load_profile(str(path))) == whole, (chunk, path.name)
        finally:
            monkeypatch.undo()


def test_chunked_errors_name_the_line(tmp_path, monkeypatch):
    path = tmp_path / "bad.hatchet"
    path.write_text(_tricky_profile().replace('"count": 1,', '"count": 1,,', 1))
    monkeypatch.setattr(reader, "FIRST_READ", 50)
    monkeypatch.setattr(reader, "CHUNK", 50)
    monkeypatch.setattr(reader, "AHEAD", 20)
    with pytest.raises(Exception) as chunked:
        load_profile(str(path))
    monkeypatch.undo()
    with pytest.raises(Exception) as whole:
        load_profile(str(path))
    assert str(chunked.value) == str(whole.value)
    assert "Expecting property name enclosed in double quotes at line" in str(whole.value)


def test_hundred_thousand_deep_chain_reads_and_prints(tmp_path):
    depth = 100_000
    path = tmp_path / "deep.hatchet"
    path.write_text(deep_chain_text(depth))
    probe = ("import resource, sys\n"
             "from flagtree.profiler.viewer.cli import main\n"
             "status = main(sys.argv[1:])\n"
             # VmHWM, not ru_maxrss: a spawned child's ru_maxrss starts at its parent's size
             "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
             "kib = int(peak[0].split()[1]) if peak else "
             "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
             "sys.stderr.write('%d\\n' % kib)\n"
             "sys.exit(status)\n")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    done = subprocess.run([sys.executable, "-c", probe, "-m", "count", str(path)], env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == depth + 2
    assert lines[1] == f"{depth + 1}  ROOT"
    assert lines[-1].endswith(f"[+{depth - 128}] `- k") and len(lines[-1]) < 500
    peak_mib = int(done.stderr) / 1024
    # Proportional to the tree: the old reader and renderer grew past 14 GB on this file.
    assert peak_mib < 40 * path.stat().st_size / 2**20, peak_mib


def test_deep_chain_costs_few_failed_scans(tmp_path, monkeypatch):
    path = tmp_path / "deep.hatchet"
    path.write_text(deep_chain_text(20_000))
    calls = []
    original = reader._Parser.scan_node

    def counting(self, pos):
        found = original(self, pos)
        calls.append(found[0] is None)
        return found

    monkeypatch.setattr(reader._Parser, "scan_node", counting)
    profile = load_profile(str(path))
    assert len(profile.root.path_names()) == 0 and profile.names == {"time (ns)", "count",
                                                                      "device_id", "device_type"}
    # one failed scan per SKIP_LEVELS levels, then the scanner takes the rest of the chain
    assert sum(calls) <= 20_000 // reader.SKIP_LEVELS + 2
