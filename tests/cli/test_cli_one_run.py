"""`flagtree-profiler -d tree,trace`: one run of the script writes the tree, the timeline and one
metadata file for both, and the viewer's report of that tree carries that run's timeline."""
import json
import os
import subprocess
import sys
import textwrap

from flagtree.profiler.run_id import run_id_of
from flagtree.profiler.viewer.cli import main as viewer_main

SCRIPT = textwrap.dedent('''
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
    for step in range(2):
        with profiler.scope(f"step{step}"):
            for _ in range(3):
                add_kernel[(1,)](x, y, out, 64, BLOCK=64)
''')


def payload_of(path):
    text = open(path, encoding="utf-8").read()
    marker = '<script id="report-data" type="application/json">'
    start = text.index(marker) + len(marker)
    return json.loads(text[start:text.index("</script>", start)])


def test_one_run_writes_tree_trace_and_one_metadata_and_the_report_has_its_timeline(tmp_path, capsys):
    (tmp_path / "steps.py").write_text(SCRIPT)
    env = dict(os.environ, TRITON_INTERPRET="1")
    result = subprocess.run([sys.executable, "-m", "flagtree.profiler.cli", "-d", "tree,trace", "-n", "one",
                             "steps.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-2:] == ["flagtree-profiler: wrote one.hatchet",
                                               "flagtree-profiler: wrote one.chrome_trace"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("one.")) == [
        "one.chrome_trace", "one.hatchet", "one.meta.json"]
    meta = json.loads((tmp_path / "one.meta.json").read_text())
    assert meta["data"] == "tree,trace" and meta["outputs"] == ["one.hatchet", "one.chrome_trace"]
    assert run_id_of(tmp_path / "one.hatchet") == meta["run_id"] == run_id_of(tmp_path / "one.chrome_trace")

    report = tmp_path / "one.html"
    assert viewer_main(["--html", str(report), str(tmp_path / "one.hatchet")]) == 0
    assert "note:" not in capsys.readouterr().err
    payload = payload_of(report)
    assert payload["summary"]["timeline"]["file"] == "one.chrome_trace"
    timeline = payload["timeline"]  # embedded: the run's own trace, drawn by the page
    assert [lane["device"] for lane in timeline["lanes"]] == [0, 1]
    assert [timeline["strings"][n] for n in timeline["name"]].count("add_kernel") == 6
    facts = dict(payload["summary"]["facts"])
    assert "metadata" not in facts and facts["backend"] == "interpreter"
