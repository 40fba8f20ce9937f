"""Proton's viewer functions in flagtree.profiler.viewer: its signatures, return shapes and
column names, our reader's numbers."""
import io
import json

import pytest

from viewer_helpers import H100, kernel, node

pytest.importorskip("hatchet")
from flagtree.profiler.viewer import (derive_metrics, filter_frames, format_frames, get_raw_metrics,  # noqa: E402
                                      parse, read)

FRAME = "/home/u/proj/run.py:12@step"
PROFILE = [node("ROOT", {},
                node("fwd", {}, kernel("attn", 3000, count=3, flops16=3e9, bytes=3e6)),
                node(FRAME, {}, kernel("copy", 1000, count=1, bytes=1e6))), H100]


@pytest.fixture
def path(tmp_path):
    out = tmp_path / "p.hatchet"
    out.write_text(json.dumps(PROFILE))
    return str(out)


@pytest.mark.parametrize("given", ["path", "open file", "text buffer"])
def test_get_raw_metrics_gives_protons_four_parts_from_a_path_or_a_file(path, given):
    if given == "path":
        parts = get_raw_metrics(path)
    elif given == "open file":
        with open(path) as f:
            parts = get_raw_metrics(f)
    else:
        parts = get_raw_metrics(io.StringIO(open(path).read()))
    gf, inclusive, exclusive, device_info = parts
    assert sorted(inclusive) == ["bytes", "count", "flops16", "time (ns)"]
    assert exclusive[0] == "name" and "device_id" in exclusive
    assert device_info == H100
    assert gf.dataframe["name"].tolist() == ["ROOT", "fwd", "attn", FRAME, "copy"]
    assert gf.dataframe["time (ns) (inc)"].tolist()[0] == 4000
    assert read(path)[1:] == (inclusive, exclusive, device_info)


def test_derive_metrics_adds_columns_under_protons_names(path):
    gf, inclusive, exclusive, device_info = read(path)
    names = derive_metrics(gf, ["time/us", "time/%", "avg_time/ns", "gbyte/s", "util", "count", "time"],
                           inclusive, exclusive, device_info)
    assert names == ["time/us (inc)", "time/% (inc)", "avg_time/ns (inc)", "gbyte/s (inc)", "util",
                     "count (inc)", "time (ns) (inc)"]
    frame = gf.dataframe
    assert frame["time/us (inc)"].tolist() == [4.0, 3.0, 3.0, 1.0, 1.0]
    assert frame["time/% (inc)"].tolist() == [100.0, 75.0, 75.0, 25.0, 25.0]
    assert frame["avg_time/ns (inc)"].tolist()[2] == 1000.0
    assert frame["gbyte/s (inc)"].tolist()[0] == pytest.approx(1000.0)
    assert frame["util"].isna().tolist() == [True, True, False, True, False]  # kernels only
    assert "util" in gf.exc_metrics and {"time/us (inc)", "gbyte/s (inc)"} <= set(gf.inc_metrics)


def test_format_frames_rewrites_python_frames_as_protons_styles(path):
    expected = {None: FRAME, "full": FRAME, "file_function_line": "run.py:12@step",
                "function_line": "12@step", "file_function": "run.py@step"}
    for style, name in expected.items():
        gf = format_frames(get_raw_metrics(path)[0], style)
        assert gf.dataframe["name"].tolist()[3] == name
    with pytest.raises(ValueError, match="unknown frame format"):
        format_frames(get_raw_metrics(path)[0], "nope")


def test_filter_frames_includes_excludes_and_keeps_nodes_over_a_threshold(path):
    gf, inclusive, exclusive, device_info = read(path)
    (metric,) = derive_metrics(gf, ["time/us"], inclusive, exclusive, device_info)
    kept = filter_frames(gf, include="fwd", metric=metric)
    assert kept.dataframe["name"].tolist() == ["ROOT", "fwd", "attn"]
    assert kept.dataframe[metric].tolist() == [3.0, 3.0, 3.0]  # our -i: ROOT sums what stays
    assert filter_frames(gf, exclude="fwd").dataframe["name"].tolist() == ["ROOT", FRAME, "copy"]
    assert filter_frames(gf, threshold=2.0, metric=metric).dataframe["name"].tolist() == ["ROOT", "fwd", "attn"]
    assert filter_frames(gf) is gf


def test_parse_reads_derives_and_filters_on_the_first_metric(path):
    gf, names = parse(["time/us", "count"], path, exclude="copy", threshold=2.0)
    assert names == ["time/us (inc)", "count (inc)"]
    assert gf.dataframe["name"].tolist() == ["ROOT", "fwd", "attn"]
    assert all(name in gf.inc_metrics or name in gf.exc_metrics for name in names)


def test_a_frame_hatchet_filtered_itself_cannot_be_derived_again(path):
    gf, inclusive, exclusive, device_info = read(path)
    squashed = gf.filter(lambda row: row["name"] != "copy", squash=True)
    with pytest.raises(ValueError, match="lost its file"):
        derive_metrics(squashed, ["time/ms"], inclusive, exclusive, device_info)
