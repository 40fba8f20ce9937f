"""--speedscope and --collapsed: schema, weights, per-device and per-rank splits, escaping."""

import os
import shutil
from urllib.parse import unquote

import pytest

from flame_fixtures import SPEEDSCOPE_SCHEMA, load_json, session_profile  # noqa: F401 (fixture)
from viewer_helpers import fixture, kernel, node

jsonschema = pytest.importorskip("jsonschema")
TIME = "time (ns)"


def raw_exclusive(path, key=TIME):
    """{path tuple below the root: summed exclusive value} straight from the JSON file."""
    root = load_json(path)[0]
    out = {}
    stack = [((), root)]
    while stack:
        names, raw = stack.pop()
        value = raw["metrics"].get(key)
        if value:
            out[names] = out.get(names, 0) + value
        stack.extend((names + (c["frame"]["name"],), c) for c in raw["children"])
    return out


def check_speedscope(document, schema=True):
    """The schema, plus what a schema cannot say: frames in range, every frame closed in the
    order it was opened, time never going back, the end where the last event is."""
    if schema:
        jsonschema.validate(document, SPEEDSCOPE_SCHEMA)
    frames = document["shared"]["frames"]
    for profile in document["profiles"]:
        assert profile["type"] == "evented"
        open_, at = [], profile["startValue"]
        for event in profile["events"]:
            assert 0 <= event["frame"] < len(frames) and event["at"] >= at
            at = event["at"]
            if event["type"] == "O":
                open_.append(event["frame"])
            else:
                assert open_.pop() == event["frame"]
        assert not open_ and profile["endValue"] == at
    return frames


def frame_name(frame):
    """The tree's node name back from a speedscope frame ('<file>:<line>@<function>')."""
    if "file" in frame:
        return f"{frame['file']}:{frame['line']}@{frame['name']}"
    return frame["name"]


def sampled_paths(document, profile):
    """{path of names: the time spent with exactly that path open}, replayed from the events
    (the root's own weight comes as the path ('ROOT',))."""
    frames = document["shared"]["frames"]
    out, stack, last = {}, [], profile["startValue"]
    for event in profile["events"]:
        if stack and event["at"] > last:
            key = tuple(frame_name(frames[i]) for i in stack)
            out[key] = out.get(key, 0) + event["at"] - last
        last = event["at"]
        if event["type"] == "O":
            stack.append(event["frame"])
        else:
            stack.pop()
    return out


def parse_collapsed(text):
    """{path tuple: weight}: every line is 'a;b;c <integer>' and unescapes to the names."""
    out = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        assert count.isdigit(), line
        key = tuple(unquote(frame) for frame in stack.split(";"))
        out[key] = out.get(key, 0) + int(count)
    return out


def test_speedscope_of_a_real_session_matches_the_tree(viewer, tmp_path, session_profile):
    out = tmp_path / "run.speedscope.json"
    status, stdout, err = viewer("--speedscope", out, session_profile)
    assert status == 0, err
    assert f"wrote {out}" in stdout
    document = load_json(out)
    check_speedscope(document)
    (profile,) = document["profiles"]  # the interpreter backend: one device, CPU:0
    assert profile["unit"] == "nanoseconds" and profile["name"].startswith("CPU:0")
    assert sampled_paths(document, profile) == raw_exclusive(session_profile)
    assert {("attention", "add_kernel"), ("mlp", "copy_kernel")} <= set(sampled_paths(document, profile))


def test_speedscope_one_profile_per_device(viewer, tmp_path):
    out = tmp_path / "d.speedscope.json"
    status, _, err = viewer("--speedscope", out, fixture("two_devices.hatchet"))
    assert status == 0, err
    document = load_json(out)
    check_speedscope(document)
    by_name = {p["name"].split(" ")[0]: sampled_paths(document, p) for p in document["profiles"]}
    assert by_name == {"CUDA:0": {("rank0", "gemm_kernel"): 2000000},
                       "CUDA:1": {("rank1", "gemm_kernel"): 1000000}}


def test_speedscope_one_profile_per_rank_file(viewer, tmp_path):
    for rank in (0, 1):
        shutil.copy(fixture("flagtree_h200_workload.hatchet" if rank else "nested_scopes.hatchet"),
                    tmp_path / f"job.rank{rank}.hatchet")
    out = tmp_path / "ranks.speedscope.json"
    paths = [tmp_path / "job.rank1.hatchet", tmp_path / "job.rank0.hatchet"]
    status, _, err = viewer("--speedscope", out, *paths)
    assert status == 0, err
    document = load_json(out)
    check_speedscope(document)
    names = [p["name"] for p in document["profiles"]]
    assert [n.split(" - ")[0] for n in names] == ["rank 0", "rank 1"]
    assert sampled_paths(document, document["profiles"][1]) == raw_exclusive(str(paths[0]))


def test_speedscope_weights_follow_the_first_metric(viewer, tmp_path):
    out = tmp_path / "c.speedscope.json"
    status, _, err = viewer("-m", "count,time/ms", "--speedscope", out, fixture("nested_scopes.hatchet"))
    assert status == 0, err
    document = load_json(out)
    check_speedscope(document)
    (profile,) = document["profiles"]
    assert profile["unit"] == "none"
    assert sampled_paths(document, profile) == raw_exclusive(fixture("nested_scopes.hatchet"), "count")


def test_speedscope_splits_python_frames_into_file_and_line(viewer, tmp_path):
    out = tmp_path / "cpu.speedscope.json"
    status, _, err = viewer("-m", "cpu_time/ms", "--speedscope", out, fixture("nested_scopes.hatchet"))
    assert status == 0, err
    document = load_json(out)
    frames = check_speedscope(document)
    assert {"name": "main", "file": "/home/u/app.py", "line": 42} in frames
    (profile,) = document["profiles"]
    assert profile["name"].startswith("host")
    assert sampled_paths(document, profile) == raw_exclusive(fixture("nested_scopes.hatchet"), "cpu_time (ns)")


def test_collapsed_of_a_real_session_parses_back_to_the_tree(viewer, tmp_path, session_profile):
    out = tmp_path / "run.folded"
    status, _, err = viewer("--collapsed", out, session_profile)
    assert status == 0, err
    folded = parse_collapsed(out.read_text())
    expected = raw_exclusive(session_profile)
    assert folded == {k: round(v) for k, v in expected.items()}
    root_time = sum(raw_exclusive(session_profile).values())
    assert sum(folded.values()) == round(root_time) > 0


def test_collapsed_escapes_separators_and_newlines(viewer, write_profile, tmp_path):
    nasty = "evil;name\nwith%25 newline"
    path = write_profile([node("ROOT", {}, node("scope;a", {}, kernel(nasty, 7), kernel("ok", 5)))])
    out = tmp_path / "n.folded"
    status, _, err = viewer("--collapsed", out, path)
    assert status == 0, err
    lines = out.read_text().splitlines()
    assert len(lines) == 2 and all(line.count(" ") >= 1 for line in lines)
    assert parse_collapsed(out.read_text()) == {("scope;a", nasty): 7, ("scope;a", "ok"): 5}


def test_export_replaces_a_planted_symlink_instead_of_following_it(viewer, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "out.folded"
    os.symlink(victim, link)
    status, _, err = viewer("--collapsed", link, fixture("two_devices.hatchet"))
    assert status == 0, err
    assert victim.read_text() == "keep me" and not link.is_symlink()
    assert "gemm_kernel" in link.read_text()


def test_export_to_a_missing_folder_is_a_clean_error(viewer, tmp_path):
    status, _, err = viewer("--speedscope", tmp_path / "no" / "x.json", fixture("two_devices.hatchet"))
    assert status == 2 and "cannot write" in err and "Traceback" not in err


def test_exports_survive_a_lone_surrogate_in_a_name(viewer, write_profile, tmp_path):
    path = write_profile('[{"frame": {"name": "ROOT"}, "metrics": {}, "children": [{"frame": '
                         '{"name": "bad\\ud800name"}, "metrics": {"time (ns)": 5, "device_id": 0}, '
                         '"children": []}]}, {}]')
    folded, scope, html = tmp_path / "s.folded", tmp_path / "s.json", tmp_path / "s.html"
    status, _, err = viewer("--collapsed", folded, "--speedscope", scope, "--html", html, path)
    assert status == 0, err
    assert folded.read_text() == "bad\\ud800name 5\n"
    assert load_json(scope)["shared"]["frames"][0]["name"] == "bad\ud800name"
    assert "bad\\ud800name" in html.read_text()
