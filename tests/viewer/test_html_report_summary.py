"""The report's first screen: the summary (from the metadata beside the profile), the top
kernels and scopes (the viewer's own sums), the note on children too narrow to draw, and the
button that hands the session's timeline to Perfetto. Checked in the data and, in headless
Chromium, on screen (screenshots of the summary and top-kernels sections)."""

import base64
import json
import shutil

import pytest

from flame_fixtures import DevTools, chromium, load_json, session_profile  # noqa: F401 (fixtures)
from viewer_helpers import fixture, kernel, node


def payload_of(path):
    text = open(path, encoding="utf-8").read()
    marker = '<script id="report-data" type="application/json">'
    start = text.index(marker) + len(marker)
    return json.loads(text[start:text.index("</script>", start)])


def report(viewer, tmp_path, *argv):
    out = tmp_path / "report.html"
    status, _, err = viewer("--html", out, *argv)
    assert status == 0, err
    return out


def kernel_times(profile_path):
    """{kernel name: (count, time ns)} summed straight from the JSON file."""
    out = {}
    stack = [load_json(profile_path)[0]]
    while stack:
        raw = stack.pop()
        metrics = raw["metrics"]
        if "device_id" in metrics:
            count, time = out.get(raw["frame"]["name"], (0, 0))
            out[raw["frame"]["name"]] = (count + metrics.get("count", 0), time + metrics.get("time (ns)", 0))
        stack.extend(raw["children"])
    return out


UNITS_MS = {"s": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}


def shows(text, expected_ms):
    """True when '12.345 ms' (or s, us, ns: three decimals of its unit) shows expected_ms."""
    value, unit = text.split()
    return float(value) == pytest.approx(expected_ms / UNITS_MS[unit], abs=0.0006)


def test_summary_of_a_real_session_comes_from_its_metadata_and_tree(viewer, tmp_path, session_profile):
    summary = payload_of(report(viewer, tmp_path, session_profile))["summary"]
    meta = load_json(session_profile[: -len(".hatchet")] + ".meta.json")
    facts = dict(summary["facts"])
    assert facts["backend"] == meta["backend"] == "interpreter"
    assert facts["device"] == "CPU:0 " + meta["devices"][0]["name"]
    wall_ms = (meta["stop_time_ns"] - meta["start_time_ns"]) / 1e6
    assert shows(facts["session wall time"], wall_ms)
    times = kernel_times(session_profile)
    busy_ms = sum(t for _, t in times.values()) / 1e6
    assert shows(facts["device busy time (kernels)"].split(" (")[0], busy_ms)
    assert f"({100 * busy_ms / wall_ms:.1f}% of the session)" in facts["device busy time (kernels)"]
    assert facts["kernels"] == "5 launched, 2 distinct" and facts["lost records"] == "none"
    assert "profiler overhead" not in facts  # the metadata has no such figure
    head, rows = summary["kernels"]["head"], summary["kernels"]["rows"]
    # no util or FLOP columns on a CPU; no timeline beside the tree, so no spread of single launches
    assert head == ["kernel", "count", "total", "mean", "min", "max", "median", "std dev", "share"]
    assert [r[0] for r in rows] == sorted(times, key=lambda k: -times[k][1])
    for name, count, total, mean, low, high, median, std, share in rows:
        assert int(count) == times[name][0]
        assert shows(total, times[name][1] / 1e6)
        assert shows(mean, times[name][1] / 1e6 / times[name][0])
        assert [low, high, median, std] == ["-"] * 4
    assert sum(float(r[8][:-1]) for r in rows) == pytest.approx(100, abs=0.2)
    scopes = {r[0]: r for r in summary["scopes"]["rows"]}
    assert set(scopes) == {"attention", "mlp"} and summary["timeline"] is None


def test_top_kernels_get_util_and_tflops_columns_when_the_metrics_exist(viewer, tmp_path):
    summary = payload_of(report(viewer, tmp_path, fixture("nested_scopes.hatchet")))["summary"]
    head, rows = summary["kernels"]["head"], summary["kernels"]["rows"]
    assert head == ["kernel", "count", "total", "mean", "min", "max", "median", "std dev", "share", "util", "TFLOP/s"]
    attn = {r[0]: r for r in rows}["attn_fwd"]
    assert attn[10] == "137.439"  # 137438953472 FLOP in 1 ms, as the tooltip says
    assert 0 < float(attn[9]) <= 1


def test_top_scopes_rank_by_exclusive_time(viewer, write_profile, tmp_path):
    # outer launches 5 itself and holds inner (30): inclusive 35, exclusive 5.
    path = write_profile([node("ROOT", {}, node("outer", {}, kernel("a", 5), node("inner", {}, kernel("b", 30)))), {}])
    rows = payload_of(report(viewer, tmp_path, path))["summary"]["scopes"]["rows"]
    assert rows == [["outer > inner", "30 ns", "85.7%", "30 ns"], ["outer", "5 ns", "14.3%", "35 ns"]]


def test_metadata_losses_and_overhead_are_shown(viewer, tmp_path):
    profile = tmp_path / "lossy.hatchet"
    shutil.copy(fixture("nested_scopes.hatchet"), profile)
    (tmp_path / "lossy.meta.json").write_text(json.dumps(
        {"backend": "nvidia", "devices": [{"index": 0, "name": "NVIDIA H200", "type": "CUDA"}],
         "lost_launches": 3, "dropped_records": 7, "profiler_overhead_ns": 1500000,
         "start_time_ns": 0, "stop_time_ns": 2_000_000_000}))
    facts = dict(payload_of(report(viewer, tmp_path, profile))["summary"]["facts"])
    assert facts["device"] == "CUDA:0 NVIDIA H200" and facts["backend"] == "nvidia"
    assert facts["lost records"] == "7" and facts["profiler overhead"] == "1.500 ms"
    assert facts["session wall time"] == "2.000 s"


def test_a_timeline_beside_the_profile_gets_a_perfetto_button(viewer, tmp_path, session_profile):
    profile = tmp_path / "run.hatchet"
    shutil.copy(session_profile, profile)
    (tmp_path / "run.pftrace").write_bytes(b"\x0a\x02\x08\x01")
    assert payload_of(report(viewer, tmp_path, profile))["summary"]["timeline"] == \
        {"file": "run.pftrace", "kind": "Perfetto trace"}


# ---- in the browser ----

@pytest.fixture
def browser(chromium, tmp_path):
    tools = DevTools(chromium, tmp_path / "devtools-profile")
    yield tools
    tools.close()


def shoot(browser, selector, path):
    """A PNG of one element of the page (its box on the page, at scale 1)."""
    box = browser.eval(f"(() => {{ const b = document.querySelector({selector!r}).getBoundingClientRect();"
                       " return {x: b.left + scrollX, y: b.top + scrollY, width: b.width, height: b.height}; })()")
    assert box["width"] > 100 and box["height"] > 20, box
    data = browser.call("Page.captureScreenshot", format="png", clip=dict(box, scale=1),
                        captureBeyondViewport=True)["data"]
    path.write_bytes(base64.b64decode(data))
    print(f"\n{selector} screenshot: {path}")
    return path


def png_bytes(png_path):
    """The PNG's size: a blank (single-colour) box compresses to a few hundred bytes, text does not."""
    return png_path.stat().st_size


def test_summary_and_top_kernels_on_screen(browser, viewer, tmp_path, session_profile):
    profile = tmp_path / "run.hatchet"
    shutil.copy(session_profile, profile)
    shutil.copy(session_profile[: -len(".hatchet")] + ".meta.json", tmp_path / "run.meta.json")
    (tmp_path / "run.pftrace").write_bytes(b"\x0a\x02\x08\x01")
    browser.open(report(viewer, tmp_path, profile).as_uri())
    assert browser.eval("document.getElementById('summary').hidden") is False
    facts = browser.eval("document.getElementById('facts').innerText")
    assert "backend\tinterpreter" in facts.replace("\n", "\t") and "5 launched, 2 distinct" in facts
    table = browser.eval("document.getElementById('top-kernels').innerText")
    assert table.splitlines()[0].split("\t") == ["kernel", "count", "total", "mean", "min", "max", "median",
                                                 "std dev", "share"]
    assert table.splitlines()[1].startswith("add_kernel\t4\t")
    summary_top = browser.eval("document.getElementById('summary').getBoundingClientRect().bottom")
    assert summary_top <= browser.eval("document.getElementById('flame').getBoundingClientRect().top")
    button = browser.eval("document.getElementById('open-perfetto').innerText")
    assert button == "Open run.pftrace in Perfetto"
    line = browser.eval("document.getElementById('timeline').innerText")
    assert "pick that file (the report hands it to https://ui.perfetto.dev)" in line
    for selector, name in (("#summary", "summary.png"), ("#top-kernels", "top-kernels.png")):
        shot = shoot(browser, selector, tmp_path / name)
        assert png_bytes(shot) > 2000  # text drawn, not an empty box


def test_children_too_narrow_to_draw_are_said_and_listed(browser, viewer, write_profile, tmp_path):
    tiny = [kernel(f"k{i}", 1) for i in range(5000)]
    path = write_profile([node("ROOT", {}, kernel("big", 10_000_000), *tiny), {}])
    browser.open(report(viewer, tmp_path, path).as_uri())
    note = browser.eval("document.getElementById('narrow').innerText")
    assert note.startswith("5,000 children under ROOT, too narrow at this zoom") and "see the table" in note
    browser.eval("document.querySelector('#narrow button').click()")
    assert browser.eval("__report.listed") == 500
    items = browser.eval("[...document.querySelectorAll('#narrow-list li')].map(li => li.textContent)")
    assert len(items) == 501 and items[-1] == "... 4,501 more: see the table below"  # all 5,001, widest first
    assert items[0] == "big  10 ms" and all(item.startswith("k") and item.endswith("  1 ns") for item in items[1:500])
    browser.eval("document.querySelector('#narrow-list li').click()")
    assert browser.eval("__report.state.zoom") > 0 and browser.eval("__report.narrow.length") == 0
