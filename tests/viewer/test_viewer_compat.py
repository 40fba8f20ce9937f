"""proton-viewer habits: frame formats, metadata scopes, empty profiles, parts, option names."""

import json

import pytest

from test_viewer_errors import one_error_line
from viewer_helpers import kernel, node


@pytest.fixture
def frames(write_profile):
    inner = node("/home/u/pkg/model.py:17@attention", {}, kernel("attn_kernel", 3000))
    outer = node("/home/u/app.py:42@main", {}, inner, kernel("ns::copy:kernel", 1000))
    return write_profile(json.dumps([node("ROOT", {}, outer), {}]))


@pytest.mark.parametrize("style,main,attention", [
    ("file_function_line", "app.py:42@main", "model.py:17@attention"),
    ("function_line", "42@main", "17@attention"),
    ("file_function", "app.py@main", "model.py@attention"),
    ("full", "/home/u/app.py:42@main", "/home/u/pkg/model.py:17@attention"),
])
def test_proton_frame_formats(viewer, frames, style, main, attention):
    status, out, _ = viewer("-f", style, "-m", "time/ns", frames)
    assert status == 0
    assert [line.split("- ", 1)[-1] for line in out.splitlines()[2:]] == [
        main, attention, "attn_kernel", "ns::copy:kernel"]  # non-frame names stay whole


def test_proton_frame_format_in_sorted_paths(viewer, frames):
    _, out, _ = viewer("--print_sorted", "-f", "function_line", "-m", "time/ns", frames)
    assert out.splitlines()[1] == "   3000  42@main -> 17@attention -> attn_kernel"


@pytest.fixture
def with_metadata(write_profile):
    hooks = [node(name, {"cpu_time (ns)": 50}, kernel("meta_kernel", 7)) for name in
             ("__launch_metadata", "__proton_launch_metadata")]
    scope = node("step", {}, kernel("gemm", 100), *hooks)
    return write_profile(json.dumps([node("ROOT", {}, scope), {}]))


def test_metadata_scopes_hidden_by_default(viewer, with_metadata):
    status, out, _ = viewer("-m", "time/ns,cpu_time/ns", with_metadata)
    assert status == 0 and "launch_metadata" not in out and "meta_kernel" not in out
    assert out.splitlines()[1].split()[:2] == ["100", "-"]  # their time is not in ROOT either


def test_show_metadata_keeps_them(viewer, with_metadata):
    _, out, _ = viewer("--show-metadata", "-m", "time/ns", with_metadata)
    assert "__launch_metadata" in out and "__proton_launch_metadata" in out
    assert out.splitlines()[1].split()[0] == "114"


@pytest.mark.parametrize("content", [
    [node("ROOT", {}), {}],
    [node("ROOT", {}), {"CUDA": {"0": {"arch": "90"}}}],
])
def test_empty_profile_says_so(viewer, write_profile, content):
    path = write_profile(json.dumps(content))
    assert one_error_line(viewer(path)) == (
        f"profile {path} is empty: no kernels or scopes were recorded")
    status, out, _ = viewer("-l", path)
    assert status == 0 and "(none: the profile recorded no kernels)" in out


def test_root_with_records_is_not_empty(viewer, write_profile):
    path = write_profile(json.dumps([node("ROOT", {"time (ns)": 5, "count": 1}), {}]))
    status, out, _ = viewer("-m", "time/ns", path)
    assert status == 0 and out.splitlines()[1] == "      5  ROOT"


def test_parts_are_read_when_only_parts_exist(viewer, tmp_path):
    for k, time_ns in ((1, 10), (2, 20), (10, 400)):
        part = [node("ROOT", {}, kernel("k", time_ns), kernel(f"only{k}", 1)), {}]
        (tmp_path / f"run.part{k}.hatchet").write_text(json.dumps(part))
    (tmp_path / "run.partx.hatchet").write_text("not a part")
    (tmp_path / "other.part1.hatchet").write_text("not ours")
    status, out, err = viewer("-m", "time/ns", tmp_path / "run.hatchet")
    assert (status, err) == (0, "")
    rows = out.splitlines()
    assert rows[1] == "    433  ROOT" and "    430  |- k" in rows
    assert {"only1", "only2", "only10"} <= {row.rsplit(" ", 1)[-1] for row in rows}
    status, out, _ = viewer("-l", tmp_path / "run.hatchet")
    assert "run.part1.hatchet, " in out and out.index("part2.") < out.index("part10.")


def test_existing_file_wins_over_parts(viewer, tmp_path):
    (tmp_path / "run.hatchet").write_text(json.dumps([node("ROOT", {}, kernel("whole", 1)), {}]))
    (tmp_path / "run.part1.hatchet").write_text(json.dumps([node("ROOT", {}, kernel("part", 1)), {}]))
    _, out, _ = viewer("-m", "time/ns", tmp_path / "run.hatchet")
    assert "whole" in out and "part" not in out


def test_missing_file_without_parts_is_an_error(viewer, tmp_path):
    assert one_error_line(viewer(tmp_path / "run.hatchet")).endswith("No such file or directory")


def test_root_is_inclusive_of_its_own_records(viewer, write_profile):
    # ROOT's own metrics (records attributed to no scope) count in its row, as documented.
    path = write_profile(json.dumps([node("ROOT", {"time (ns)": 5}, kernel("k", 10)), {}]))
    _, out, _ = viewer("-m", "time/ns", path)
    assert out.splitlines()[1:] == ["     15  ROOT", "     10  `- k"]
