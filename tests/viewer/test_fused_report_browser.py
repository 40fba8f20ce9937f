"""The report's hover details of an inductor kernel, in headless Chromium: what it fuses (the
tree root's inductor_kernels), shown as text, on that kernel only."""
import json

import pytest

from flame_fixtures import DevTools, chromium  # noqa: F401 (fixtures)
from test_html_report_browser import TIP

NAME = "triton_per_fused_gelu_native_layer_norm_0"
FACTS = {"fused_aten": ["aten.native_layer_norm", "aten.gelu"], "fused_nodes": ["input_2", "<b>x</b>"],
         "source_lines": ["/m/model.py:29 in forward"]}


def _kernel(name, ns):
    return {"frame": {"name": name, "type": "function", "kind": "kernel"},
            "metrics": {"count": 1, "time (ns)": ns, "device_id": 0, "device_type": 1}, "children": []}


@pytest.fixture
def browser(chromium, tmp_path):
    tools = DevTools(chromium, tmp_path / "devtools-profile")
    yield tools
    tools.close()


def test_hovering_an_inductor_kernel_says_what_it_fuses(browser, viewer, tmp_path):
    root = {"inductor_kernels": {NAME: FACTS}, "frame": {"name": "ROOT", "type": "function"},
            "metrics": {}, "children": [_kernel(NAME, 3000), _kernel("other_kernel", 2000)]}
    profile = tmp_path / "run.hatchet"
    profile.write_text(json.dumps([root, {}]))
    out = tmp_path / "report.html"
    status, _, err = viewer("--html", out, profile)
    assert status == 0, err
    browser.open(out.as_uri())
    spot = browser.eval(f"__report.where('{NAME}')")
    browser.mouse("mouseMoved", spot["x"], spot["y"])
    tip = browser.eval(TIP).splitlines()
    assert "fused aten: aten.native_layer_norm, aten.gelu" in tip
    assert "fused nodes: input_2, <b>x</b>" in tip  # text, not markup
    assert "source lines: /m/model.py:29 in forward" in tip
    spot = browser.eval("__report.where('other_kernel')")
    browser.mouse("mouseMoved", spot["x"], spot["y"])
    assert "fused" not in browser.eval(TIP)
