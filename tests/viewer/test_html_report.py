"""--html: a self-contained report, checked as text and in a real headless Chromium."""

import json
import random
import re

import pytest

from flame_fixtures import chromium, dump_dom, load_json, screenshot, session_profile  # noqa: F401
from viewer_helpers import fixture, kernel, node

INJECTION = "</script><script>window.pwned=1</script><img src=x onerror=alert(1)>&amp;"


def payload_of(html):
    match = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', html, re.S)
    assert match, "no embedded data"
    return json.loads(match.group(1))


def make_profile(total, seed=1):
    """A random tree of ``total`` nodes, a third scopes, the rest kernels with launch metadata."""
    rng = random.Random(seed)
    root = node("ROOT", {})
    scopes = [root]
    for i in range(1, total):
        parent = scopes[-1] if rng.random() < 0.5 else rng.choice(scopes)
        if rng.random() < 0.3 and len(scopes) < 5000:
            child = node(f"/src/app/module_{i % 97}.py:{i}@func_{i}", {"cpu_time (ns)": i})
            scopes.append(child)
        else:
            child = kernel(f"kernel_{i}", rng.randint(1_000, 5_000_000), count=rng.randint(1, 99),
                           flops16=rng.randint(0, 10**12), bytes=rng.randint(0, 10**9))
            child["metadata"] = {"grid": [rng.randint(1, 4096), 1, 1], "block": [128, 1, 1],
                                 "registers": rng.randint(16, 255), "static_shared_memory": 0,
                                 "dynamic_shared_memory": rng.randint(0, 200_000)}
        parent["children"].append(child)
    return [root, {"CUDA": {"0": {"arch": "90", "memory_clock_rate": 2619000, "bus_width": 6144}}}]


def write_report(viewer, tmp_path, *argv, name="report.html"):
    out = tmp_path / name
    status, stdout, err = viewer("--html", out, *argv)
    assert status == 0, err
    return out, out.read_text(encoding="utf-8")


def test_report_is_self_contained(viewer, tmp_path, session_profile):
    _, html = write_report(viewer, tmp_path, session_profile)
    assert not re.search(r"\s(src|href)\s*=", html), "nothing may be loaded from elsewhere"
    # The one address in the page: Perfetto's UI, a window the user may open on a trace.
    assert set(re.findall(r"https?://[^\s\"'<>)]+", html)) <= {"https://ui.perfetto.dev"}
    assert "default-src 'none'" in html  # the page cannot fetch even if a script tried
    assert html.count("<script") == 2 and html.count("</script>") == 2
    data = payload_of(html)
    names = {data["strings"][i] for i in data["name"]}
    assert {"attention", "mlp", "add_kernel", "copy_kernel"} <= names
    keys, rows = data["meta"]["keys"], data["meta"]["rows"]
    meta = {i: dict(zip(keys, rows[ref])) for i, ref in zip(data["meta"]["index"], data["meta"]["ref"])}
    kernels = [i for i, k in enumerate(data["kernel"]) if k]
    raw = {c["frame"]["name"]: c["metadata"] for scope in load_json(session_profile)[0]["children"]
           for c in scope["children"]}
    assert kernels and all(meta[i]["grid"] == raw[data["strings"][data["name"][i]]]["grid"] for i in kernels)
    assert all(meta[i]["registers"] == raw[data["strings"][data["name"][i]]]["registers"] for i in kernels)
    assert "add_kernel" in data["table"] and data["table"].splitlines()[0].strip() == "time"


def test_names_cannot_break_out_of_the_data_element(viewer, write_profile, tmp_path):
    path = write_profile([node("ROOT", {}, node(INJECTION, {}, kernel("k<>&", 10)))])
    _, html = write_report(viewer, tmp_path, path)
    assert INJECTION not in html and "window.pwned" in html  # present, but only escaped
    data_text = re.search(r'type="application/json">(.*?)</script>', html, re.S).group(1)
    assert not set("<>&") & set(data_text)
    assert {INJECTION, "k<>&"} <= set(payload_of(html)["strings"])


def test_ten_thousand_nodes_stay_under_two_megabytes(viewer, write_profile, tmp_path):
    path = write_profile(make_profile(10_000))
    out, html = write_report(viewer, tmp_path, path)
    assert len(payload_of(html)["parent"]) == 10_000
    assert out.stat().st_size < 2 * 1024 * 1024, out.stat().st_size


def test_diff_report_carries_both_sides(viewer, tmp_path):
    _, html = write_report(viewer, tmp_path, "--diff-profile", fixture("other_run.hatchet"),
                           fixture("nested_scopes.hatchet"))
    data = payload_of(html)
    assert data["diffSource"].endswith("other_run.hatchet")
    time = next(m for m in data["metrics"] if m["id"] == "time/ns")
    assert any(a != b for a, b in zip(time["a"], time["b"]))
    assert "(diff)" in data["table"].splitlines()[0]


def drawn(dom, attribute):
    match = re.search(rf'<body[^>]*\sdata-{attribute}="([0-9.]+)"', dom)
    assert match, f"no data-{attribute} on <body>: the page's script did not finish"
    return float(match.group(1))


def test_chromium_draws_the_tree_and_search_finds_a_kernel(chromium, viewer, tmp_path, session_profile):
    out, html = write_report(viewer, tmp_path, session_profile)
    data = payload_of(html)
    dom = dump_dom(chromium, tmp_path / "chrome", out.as_uri() + "#search=add_kernel")
    assert drawn(dom, "drawn-nodes") == len(data["parent"])  # a small tree: every node is wide enough
    adds = sum(1 for i in data["name"] if data["strings"][i] == "add_kernel")
    assert drawn(dom, "matches") == adds == 2
    assert "attention &gt; add_kernel" in dom and "mlp &gt; add_kernel" in dom
    assert re.search(r'id="match-count">2 matches<', dom)
    assert "add_kernel" in re.search(r'<pre id="table">(.*?)</pre>', dom, re.S).group(1)
    shot = screenshot(chromium, tmp_path / "chrome", out.as_uri(), tmp_path / "report.png")
    print(f"\nreport screenshot: {shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_chromium_shows_hostile_names_as_text(chromium, viewer, write_profile, tmp_path):
    path = write_profile([node("ROOT", {}, node(INJECTION, {}, kernel("k", 10)))])
    out, _ = write_report(viewer, tmp_path, path)
    dom = dump_dom(chromium, tmp_path / "chrome", out.as_uri() + "#search=pwned")
    assert drawn(dom, "matches") == 1
    assert "<img" not in dom and "onerror=alert(1)&gt;" in dom


def test_chromium_draws_a_diff(chromium, viewer, tmp_path):
    out, _ = write_report(viewer, tmp_path, "--diff-profile", fixture("other_run.hatchet"),
                          fixture("nested_scopes.hatchet"))
    dom = dump_dom(chromium, tmp_path / "chrome", out.as_uri() + "#metric=count")
    assert drawn(dom, "drawn-nodes") > 3
    assert "red = grew" in dom and "width: inclusive count" in dom


def test_chromium_draws_a_hundred_thousand_nodes_in_under_three_seconds(chromium, viewer, write_profile,
                                                                       tmp_path):
    path = write_profile(make_profile(100_000))
    out, _ = write_report(viewer, tmp_path, path)
    dom = dump_dom(chromium, tmp_path / "chrome", out.as_uri())
    ready_ms = drawn(dom, "ready-ms")  # navigation start -> first frame drawn, in the page
    print(f"\n100,000-node report: {out.stat().st_size / 1e6:.1f} MB, drawn {ready_ms:.0f} ms after navigation")
    assert drawn(dom, "drawn-nodes") > 1000
    assert ready_ms < 3000


def test_report_assets_go_into_the_wheel():
    # wheel.packages = ["src/flagtree"] packs non-.py files under the package too; this asks
    # scikit-build-core's own file walk (where it is installed) rather than trusting that.
    processor = pytest.importorskip("scikit_build_core.build._file_processor")
    from pathlib import Path

    package = Path(__file__).parents[2] / "src" / "flagtree"
    files = {p.as_posix() for p in processor.each_unignored_file(package, mode="default")}
    for asset in ("report.html", "report.js", "report.css"):
        assert any(f.endswith(f"profiler/viewer/report/{asset}") for f in files), asset


def test_chromium_install_is_left_to_ci(monkeypatch):
    # A developer's run never apt-gets anything: without CI the browser tests skip, saying why.
    from flame_fixtures import _install_chromium

    monkeypatch.delenv("CI", raising=False)
    assert _install_chromium() == (None, "Chromium is not installed (set CI=1 to let the tests apt-get install it)")
