"""The run's timeline inside the HTML report and the summary figures that need single launches:
a real tree+trace run (Triton's interpreter) and synthetic traces; in headless Chromium the
timeline zooms, pans, shows a kernel's details on click and makes no network request."""
import json

import pytest

from flame_fixtures import DevTools, chromium  # noqa: F401 (fixtures)
from flagtree.profiler.viewer import report_timeline

RUN_ID = "ab" * 16


def payload_of(path):
    text = open(path, encoding="utf-8").read()
    marker = '<script id="report-data" type="application/json">'
    start = text.index(marker) + len(marker)
    return json.loads(text[start:text.index("</script>", start)])


@pytest.fixture(scope="module")
def steps_run(tmp_path_factory):
    """run.hatchet + run.chrome_trace + run.meta.json of one run: two steps, each 3 adds, 1 copy."""
    import flagtree.profiler as profiler
    from support.kernels import launch_add, launch_copy, tensors

    out = tmp_path_factory.mktemp("steps") / "run"
    x, y, z = tensors(256)
    sid = profiler.start(str(out), data="tree,trace")
    try:
        for step in range(2):
            with profiler.scope(f"step{step}"):
                for _ in range(3):
                    launch_add(x, y, z)
                launch_copy(x, z)
    finally:
        profiler.finalize(sid)
    return out


def _report(viewer, tmp_path, *argv):
    out = tmp_path / "report.html"
    status, _, err = viewer("--html", out, *argv)
    assert status == 0, err
    return out


def test_report_of_a_tree_trace_run_has_its_timeline_and_launch_spread(viewer, tmp_path, steps_run):
    data = payload_of(_report(viewer, tmp_path, f"{steps_run}.hatchet"))
    timeline, summary = data["timeline"], data["summary"]
    assert [lane["device"] for lane in timeline["lanes"]] == [0, 1]  # scopes above kernels
    names = [timeline["strings"][n] for n in timeline["name"]]
    assert names.count("add_kernel") == 6 and names.count("copy_kernel") == 2 and names[:2] == ["step0", "step1"]
    trace = json.loads(open(f"{steps_run}.chrome_trace").read())
    adds = sorted(round(e["dur"] * 1000) for e in trace["traceEvents"] if e.get("name") == "add_kernel"
                  and e.get("ph") == "X")
    head, row = summary["kernels"]["head"], summary["kernels"]["rows"][0]
    assert head[:9] == ["kernel", "count", "total", "mean", "min", "max", "median", "std dev", "share"]
    assert row[0] == "add_kernel" and row[1] == "6"
    from flagtree.profiler.viewer.numbers import format_duration
    assert row[4:7] == [format_duration(adds[0]), format_duration(adds[-1]), format_duration((adds[2] + adds[3]) / 2)]
    assert "from run.chrome_trace" in summary["kernels"]["note"]
    steps = summary["steps"]
    assert steps["kind"] == "step" and [r[0] for r in steps["rows"]] == ["step0", "step1"]
    assert [r[4] for r in steps["rows"]] == ["4", "4"]
    assert any(label.endswith("busy / idle") for label, _ in summary["facts"])


def test_a_tree_alone_says_what_gives_the_spread(viewer, tmp_path, write_profile):
    from viewer_helpers import kernel, node

    data = payload_of(_report(viewer, tmp_path, write_profile([node("ROOT", {}, kernel("k", 5000)), {}])))
    assert data["timeline"] is None and data["summary"]["steps"] is None
    assert data["summary"]["kernels"]["rows"][0][4:8] == ["-"] * 4
    assert "-d tree,trace" in data["summary"]["kernels"]["note"]


def _synthetic(tmp_path, events, run_id=RUN_ID):
    """A tree and a trace written as the profiler writes them (one event a line, run id in both)."""
    root = {"run_id": run_id, "frame": {"name": "ROOT", "type": "function"}, "metrics": {},
            "children": [{"frame": {"name": "k", "type": "function", "kind": "kernel"},
                          "metrics": {"count": events, "time (ns)": events * 1000, "device_id": 0, "device_type": 2},
                          "children": []}]}
    (tmp_path / "big.hatchet").write_text(json.dumps([root, {}]))
    with open(tmp_path / "big.chrome_trace", "w") as out:
        out.write('{"displayTimeUnit":"ns","otherData":{"run_id":"%s"},"traceEvents":[\n' % run_id)
        out.write('{"ph":"M","name":"process_name","pid":7,"args":{"name":"Device 0"}},\n')
        out.write(",\n".join('{"ph":"X","cat":"kernel","name":"k","pid":7,"tid":%d,"ts":%d.5,"dur":1.0,'
                             '"args":{"grid":[1,1,1]}}' % (i % 2, i * 2) for i in range(events)))
        out.write("\n]}\n")
    return tmp_path / "big.hatchet"


def test_past_the_cap_the_longest_events_are_kept_and_counted(viewer, tmp_path, monkeypatch):
    monkeypatch.setattr(report_timeline, "MAX_EVENTS", 100)
    timeline = payload_of(_report(viewer, tmp_path, _synthetic(tmp_path, 250)))["timeline"]
    assert (timeline["total"], timeline["left"], len(timeline["start"])) == (250, 150, 100)
    assert timeline["laneStart"] == [0, 50, 100]


def test_a_trace_of_another_run_is_not_embedded(viewer, tmp_path):
    path = _synthetic(tmp_path, 3)
    text = (tmp_path / "big.chrome_trace").read_text().replace(RUN_ID, "cd" * 16)
    (tmp_path / "big.chrome_trace").write_text(text)
    data = payload_of(_report(viewer, tmp_path, path))
    assert data["timeline"] is None and data["summary"]["timeline"] is None


@pytest.fixture
def browser(chromium, tmp_path):
    tools = DevTools(chromium, tmp_path / "devtools-profile")
    yield tools
    tools.close()


def _page_point(browser, time_ns, lane, row=0):
    """Page coordinates of time `time_ns` in `lane`'s row `row` of the timeline canvas."""
    return browser.eval(f"""(() => {{ const c = document.getElementById('tl-canvas').getBoundingClientRect(),
        t = __report.timeline, v = t.view;
        return {{x: c.left + ({time_ns} - v.t0) / (v.t1 - v.t0) * c.width,
                 y: c.top + t.laneTop[{lane}] + t.headHeight + ({row} + 0.5) * t.rowHeight}}; }})()""")


def _click(browser, point):
    browser.mouse("mouseMoved", point["x"], point["y"])
    browser.mouse("mousePressed", point["x"], point["y"], clicks=1)
    browser.mouse("mouseReleased", point["x"], point["y"], clicks=1)


def test_timeline_zooms_pans_and_shows_a_kernels_details_offline(browser, viewer, tmp_path, steps_run):
    out = _report(viewer, tmp_path, f"{steps_run}.hatchet")
    browser.open(out.as_uri())
    assert browser.eval("document.getElementById('timeline-view').hidden") is False
    data = payload_of(out)["timeline"]
    kernel = next(i for i, n in enumerate(data["name"]) if data["strings"][n] == "copy_kernel")
    start, dur = data["start"][kernel], data["dur"][kernel]
    # Zoom onto the copy kernel, then click its middle: the details name it with its launch facts.
    browser.eval(f"__report.timeline.zoomTo({start - dur}, {start + 2 * dur})")
    assert browser.eval("__report.timeline.drawn") >= 1
    _click(browser, _page_point(browser, start + dur / 2, lane=1))
    details = browser.eval("document.getElementById('tl-details').innerText")
    assert details.splitlines()[0] == "copy_kernel" and "grid:" in details and "Device" in details
    # The wheel zooms out around the pointer; a drag pans.
    span = browser.eval("__report.timeline.view.t1 - __report.timeline.view.t0")
    point = _page_point(browser, start, lane=1)
    browser.call("Input.dispatchMouseEvent", type="mouseWheel", x=point["x"], y=point["y"], deltaX=0, deltaY=100)
    assert browser.eval("__report.timeline.view.t1 - __report.timeline.view.t0") > span
    before = browser.eval("__report.timeline.view.t0")
    browser.mouse("mousePressed", point["x"], point["y"], clicks=1)
    browser.mouse("mouseMoved", point["x"] - 200, point["y"])
    browser.mouse("mouseReleased", point["x"] - 200, point["y"], clicks=1)
    assert browser.eval("__report.timeline.view.t0") > before
    # Nothing was fetched: the page and its timeline are the file alone.
    assert browser.eval("performance.getEntriesByType('resource').length") == 0


def test_a_large_timeline_zoomed_out_is_drawn_as_pixel_columns_and_says_so(browser, viewer, tmp_path):
    out = _report(viewer, tmp_path, _synthetic(tmp_path, 200_000))
    browser.open(out.as_uri())
    assert browser.eval("__report.timeline.covered") > 190_000
    status = browser.eval("document.getElementById('tl-status').innerText")
    assert "narrower than a pixel drawn as the pixel columns they cover" in status
    browser.eval("__report.timeline.zoomTo(0, 40000)")  # 40 us: 10 events a lane, each wide
    assert browser.eval("__report.timeline.covered") == 0 and browser.eval("__report.timeline.drawn") >= 18
