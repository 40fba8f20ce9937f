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


# One pixel near the top edge of a node's box, above its label's glyphs.
PIXEL = """(() => { const c = document.getElementById('flame'), b = c.getBoundingClientRect();
  const s = __report.where(%r); const r = c.width / b.width;
  return Array.from(c.getContext('2d').getImageData(Math.round((s.x - b.left) * r),
                                                    Math.round((s.y - 7 - b.top) * r), 1, 1).data); })()"""


def test_diff_view_colours_nodes_by_change(browser, viewer, tmp_path):
    # nested_scopes minus other_run: layernorm_kernel grew by 0.5 ms, attn_fwd shrank by 1 ms,
    # reduce_kernel did not change (see the terminal diff of the same pair).
    open_report(browser, viewer, tmp_path, "--diff-profile", fixture("other_run.hatchet"),
                fixture("nested_scopes.hatchet"))
    grew, shrank, same = (browser.eval(PIXEL % name) for name in ("layernorm_kernel", "attn_fwd", "reduce_kernel"))
    assert grew[0] > grew[2] + 60, grew  # red
    assert shrank[2] > shrank[0] + 60, shrank  # blue
    assert min(same[:3]) > 200, same  # unchanged: near white
    spot = browser.eval("__report.where('layernorm_kernel')")
    browser.mouse("mouseMoved", spot["x"], spot["y"])
    assert "time: 3 ms  vs 2.500 ms  change +500 us" in browser.eval(TIP)
    only_other = browser.eval("__report.where('new_kernel')")
    assert only_other is None  # it ran only in OTHER: no width from this profile...
    browser.eval("const s = document.getElementById('base'); s.value = 'b'; s.dispatchEvent(new Event('change'))")
    assert browser.eval("__report.where('new_kernel')") is not None  # ...but some from OTHER's


def test_the_first_metric_of_the_command_is_shown_first(browser, viewer, tmp_path):
    open_report(browser, viewer, tmp_path, "-m", "tflop16/s,time/ms", fixture("nested_scopes.hatchet"))
    chosen = browser.eval("(() => { const m = document.getElementById('metric'); return m.options[m.selectedIndex].textContent; })()")
    assert chosen == "FLOP/s"
    assert "colour: FLOP/s" in browser.eval("document.getElementById('legend').innerText")
