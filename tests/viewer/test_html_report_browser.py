"""The report driven like a user would, in headless Chromium over the DevTools protocol:
hover details, click to zoom, Escape to go back, typing a search, switching the metric."""

import pytest

from flame_fixtures import DevTools, chromium, load_json, session_profile  # noqa: F401 (fixtures)
from viewer_helpers import fixture

TIP = "(() => { const t = document.getElementById('tip'); return t.hidden ? null : t.innerText; })()"


@pytest.fixture
def browser(chromium, tmp_path):
    tools = DevTools(chromium, tmp_path / "devtools-profile")
    yield tools
    tools.close()


def open_report(browser, viewer, tmp_path, *argv):
    out = tmp_path / "report.html"
    status, _, err = viewer("--html", out, *argv)
    assert status == 0, err
    browser.open(out.as_uri())
    return out


def test_hover_shows_kernel_metadata_and_click_zooms(browser, viewer, tmp_path, session_profile):
    open_report(browser, viewer, tmp_path, session_profile)
    everything = browser.eval("__report.drawnNodes")
    assert everything == browser.eval("__report.nodeCount") == 6
    raw = {c["frame"]["name"]: c for c in load_json(session_profile)[0]["children"][1]["children"]}

    spot = browser.eval("__report.where('copy_kernel')")
    browser.mouse("mouseMoved", spot["x"], spot["y"])
    tip = browser.eval(TIP)
    grid = " x ".join(map(str, raw["copy_kernel"]["metadata"]["grid"]))
    assert tip.startswith("copy_kernel") and f"grid: {grid}" in tip and "registers:" in tip
    assert "kernel on CPU:0" in tip and "count: 1" in tip

    spot = browser.eval("__report.where('mlp')")
    browser.mouse("mouseMoved", spot["x"], spot["y"])
    browser.mouse("mousePressed", spot["x"], spot["y"], clicks=1)
    browser.mouse("mouseReleased", spot["x"], spot["y"], clicks=1)
    assert browser.eval("__report.state.zoom") == spot["node"]
    assert browser.eval("__report.drawnNodes") == 3  # mlp and its two kernels
    assert browser.eval("document.getElementById('crumbs').innerText") == "ROOT>mlp"
    shot = browser.screenshot(tmp_path / "zoomed.png")
    print(f"\nzoomed report screenshot: {shot}")

    browser.call("Input.dispatchKeyEvent", type="keyDown", key="Escape", code="Escape", windowsVirtualKeyCode=27)
    assert browser.eval("__report.state.zoom") == 0
    assert browser.eval("__report.drawnNodes") == everything


def test_typing_a_search_and_switching_metric(browser, viewer, tmp_path):
    open_report(browser, viewer, tmp_path, fixture("nested_scopes.hatchet"))
    browser.eval("document.getElementById('search').focus()")
    browser.call("Input.insertText", text="attn")
    assert browser.eval("document.getElementById('match-count').innerText") == "2 matches"
    found = browser.eval("[...document.querySelectorAll('#search-results li')].map(li => li.textContent)")
    assert sorted(found) == ["/home/u/app.py:42@main > backward > attn_bwd",
                             "/home/u/app.py:42@main > forward > attn_fwd"]
    labels = browser.eval("[...document.getElementById('metric').options].map(o => o.textContent)")
    assert labels[:3] == ["time", "count", "FLOP/s"] and "bytes/s" in labels and "util" in labels
    browser.eval("const m = document.getElementById('metric'); m.value = '2';"
                 "m.dispatchEvent(new Event('change'))")
    legend = browser.eval("document.getElementById('legend').innerText")
    assert legend.startswith("width: inclusive time") and "colour: FLOP/s" in legend
    # attn_fwd: 137438953472 FLOP in 1 ms
    spot = browser.eval("__report.where('attn_fwd')")
    browser.mouse("mouseMoved", spot["x"], spot["y"])
    assert "FLOP/s: 137.439 TFLOP/s" in browser.eval(TIP)
