"""Every export takes every name a profile can hold: metric names with a comma, a trailing
space or a CR, and node names with the characters that steer a terminal (C1 controls such as
U+009B and U+0085, the bidi overrides), which no output file or printed line carries raw."""

import json
import re
from urllib.parse import unquote

from flame_fixtures import load_json
from viewer_helpers import node

ODD_METRICS = {"a,b": 3, "c ": 4, "d\r": 6}
STEERING = "\x1b]0;pwned\x07|\x9b31m|\x85|\u202egnp.exe|\u2066x\u2069|\u200f"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def odd_kernel(name="k"):
    metrics = {"time (ns)": 5, "count": 1, "device_id": 0, "device_type": 1, **ODD_METRICS}
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": []}


def report_data(path):
    text = open(path, encoding="utf-8").read()
    marker = '<script id="report-data" type="application/json">'
    start = text.index(marker) + len(marker)
    return json.loads(text[start:text.index("</script>", start)])


def test_every_export_takes_metric_names_with_a_comma_a_trailing_space_or_a_cr(viewer, write_profile, tmp_path):
    path = write_profile([node("ROOT", {}, node("scope", {}, odd_kernel())), {}])
    html, scope, folded = tmp_path / "r.html", tmp_path / "r.json", tmp_path / "r.folded"
    status, out, err = viewer("--html", html, "--speedscope", scope, "--collapsed", folded, path)
    assert status == 0, err
    entries = {m["id"]: m for m in report_data(html)["metrics"]}
    for name, value in ODD_METRICS.items():
        assert entries[name]["a"][entries[name]["a"].index(value)] == value  # the kernel's column
    assert "scope;k 5" in folded.read_text()


def test_a_metric_named_with_a_comma_or_a_space_can_be_asked_for(viewer, write_profile, tmp_path):
    path = write_profile([node("ROOT", {}, node("scope", {}, odd_kernel())), {}])
    status, out, err = viewer("-m", "a,b", path)
    assert status == 0, err
    assert re.search(r"^\s*3 .*ROOT", out, re.M)
    status, out, err = viewer("-m", "time/ns,c ", path)
    assert status == 0, err
    assert re.search(r"^\s*5\s+4 .*ROOT", out, re.M)
    folded = tmp_path / "c.folded"
    status, _, err = viewer("-m", "c ", "--collapsed", folded, path)
    assert status == 0, err
    assert folded.read_text() == "scope;k 4\n"


def test_collapsed_escapes_c1_controls_and_bidi_overrides(viewer, write_profile, tmp_path):
    path = write_profile([node("ROOT", {}, node(STEERING, {}, odd_kernel("\x9bk\u202e"))), {}])
    folded = tmp_path / "s.folded"
    status, _, err = viewer("--collapsed", folded, path)
    assert status == 0, err
    text = folded.read_text(encoding="utf-8")
    assert RAW.search(text.replace("\n", "")) is None, ascii(text)
    (line,) = text.splitlines()
    stack, _, count = line.rpartition(" ")
    assert [unquote(frame) for frame in stack.split(";")] == [STEERING, "\x9bk\u202e"] and count == "5"


def test_no_export_file_or_wrote_line_carries_a_steering_character_raw(viewer, write_profile, tmp_path):
    path = write_profile([node("ROOT", {}, node(STEERING, {}, odd_kernel())), {}])
    html = tmp_path / "r\x9b.html"
    scope = tmp_path / "r\u202e.json"
    status, out, err = viewer("--html", html, "--speedscope", scope, path)
    assert status == 0, err
    assert RAW.search(out.replace("\n", "")) is None and "r\\x9b.html" in out and "r\\u202e.json" in out
    for written in (html, scope):
        assert RAW.search(written.read_text(encoding="utf-8").replace("\n", "")) is None, written
    names = [f["name"] for f in load_json(scope)["shared"]["frames"]]
    assert STEERING in names  # escaped in the file, the same name once parsed
    assert STEERING in report_data(html)["strings"]
