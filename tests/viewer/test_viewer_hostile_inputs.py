"""Inputs the viewer, the report and read() must survive without a traceback: a device that
never ends (/dev/zero), metadata of the wrong shape or with numbers no float holds, and a
profile replaced between the report's two reads of it."""

import json
import shutil

import pytest

import flagtree.profiler as profiler
from flagtree.profiler.viewer import exports
from flagtree.profiler.viewer.errors import ViewerError
from viewer_helpers import fixture, kernel, node

HUGE = "1" + "0" * 400


def payload_of(path):
    text = open(path, encoding="utf-8").read()
    marker = '<script id="report-data" type="application/json">'
    start = text.index(marker) + len(marker)
    return json.loads(text[start:text.index("</script>", start)])


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused_by_the_viewer_before_any_read(viewer, device):
    status, _, err = viewer(device)
    assert status == 2 and f"cannot read profile '{device}': a device, not a profile file" in err


def test_read_refuses_a_device_with_the_viewers_message():
    with pytest.raises(ViewerError, match="a device, not a profile file"):
        profiler.read("/dev/zero")


@pytest.mark.parametrize("meta", [
    {"devices": 5}, {"devices": "CUDA"}, {"devices": {"0": {}}},
    {"start_time_ns": f"@{HUGE}", "stop_time_ns": f"@{HUGE}"},
    {"start_time_ns": 0, "stop_time_ns": f"@{HUGE}"},
    {"profiler_overhead_ns": f"@{HUGE}"}, {"profiler_overhead_ns": f"@-{HUGE}"},
    {"lost_launches": f"@{HUGE}", "dropped_records": 1},
])
def test_odd_metadata_leaves_the_report_whole(viewer, tmp_path, meta):
    profile = tmp_path / "odd.hatchet"
    shutil.copy(fixture("nested_scopes.hatchet"), profile)
    text = json.dumps({"backend": "nvidia", **meta})
    (tmp_path / "odd.meta.json").write_text(text.replace(f'"@{HUGE}"', HUGE).replace(f'"@-{HUGE}"', "-" + HUGE))
    out = tmp_path / "r.html"
    status, _, err = viewer("--html", out, profile)
    assert status == 0, err
    facts = dict(payload_of(out)["summary"]["facts"])
    assert facts["backend"] == "nvidia" and "device" not in facts
    assert "session wall time" not in facts and "profiler overhead" not in facts


@pytest.mark.parametrize("replacement", [
    [{"frame": {"name": "ROOT"}, "children": 5}, {}],
    [{"frame": {"name": "ROOT"}, "children": [{"frame": {"name": ["a"]}, "children": []}]}, {}],
    [{"frame": {"name": "ROOT"}, "children": [{"frame": {"name": {"x": 1}}}, 7, None]}, {}],
    {"not": "a tree"},
])
def test_a_profile_replaced_between_the_reports_two_reads(viewer, tmp_path, monkeypatch, replacement):
    profile = tmp_path / "p.hatchet"
    shutil.copy(fixture("nested_scopes.hatchet"), profile)
    load = exports.ExportSource.load

    def load_then_replace(self, paths):
        loaded = load(self, paths)
        profile.write_text(json.dumps(replacement))  # another process renames a file over it
        return loaded

    monkeypatch.setattr(exports.ExportSource, "load", load_then_replace)
    status, _, err = viewer("--html", tmp_path / "r.html", profile)
    assert status == 0, err
    assert payload_of(tmp_path / "r.html")["summary"]["facts"]


def test_a_nan_kernel_time_leaves_the_icicle_its_other_widths_and_says_so(viewer, write_profile, tmp_path):
    scope = node("s", {}, kernel("a", 5.0), kernel("b", float("nan")), kernel("c", 7.0))
    path = write_profile([node("ROOT", {}, scope), {}])
    out = tmp_path / "r.html"
    status, _, err = viewer("--html", out, path)
    assert status == 0, err
    payload = payload_of(out)
    names = [payload["strings"][i] for i in payload["name"]]
    time = next(m for m in payload["metrics"] if m["id"] == "time/ns")["a"]
    widths = dict(zip(names, time))
    assert widths["ROOT"] == widths["s"] == 12 and widths["b"] is None  # the icicle draws a, c
    facts = dict(payload["summary"]["facts"])
    assert facts["not numbers"] == "1 nodes hold values that are not numbers: left out of the widths"
    assert "nan" not in json.dumps(payload["summary"]).lower()


def test_the_notebook_view_of_a_profile_with_nodes_but_no_metrics(write_profile):
    path = write_profile([node("ROOT", {}, node("a", {}), node("b", {})), {}])
    profile = profiler.read(path)
    html = profile._repr_html_()
    assert "No metrics to rank kernels by." in html and "<table>" in html
