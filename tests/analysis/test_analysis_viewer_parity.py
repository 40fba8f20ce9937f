"""read() gives the numbers the viewer prints: every node, every column, on every example
profile, merged files, filters, part files, --diff-profile and --print-sorted."""

import pytest

from analysis_helpers import (FIXTURE_NAMES, cell, fixture, kernel, node, profile_cells,
                              viewer_sorted, viewer_tree, write)
from flagtree.profiler import read


def _columns(profile):
    return list(profile.metrics) + list(profile.stored_metrics)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_node_and_column_matches_the_viewer(capsys, name):
    profile = read(fixture(name))
    columns = _columns(profile)
    assert columns
    printed = viewer_tree(capsys, "-m", ",".join(columns), fixture(name))
    assert profile_cells(profile, columns) == printed


def test_default_columns_are_the_viewers_derived_metrics(capsys):
    profile = read(fixture("nested_scopes.hatchet"))
    assert profile.metrics[:3] == ["time/ms", "time/%", "avg_time/us"]
    assert {"cpu_time/ms", "tflop/s", "tflop16/s", "tflop32/s", "gbyte/s", "util"} <= set(profile.metrics)
    one_width = read(fixture("proton_matmul.hatchet"))
    assert "tflop/s" in one_width.metrics and "tflop16/s" not in one_width.metrics


@pytest.mark.parametrize("metrics", ["time/ns,avg_time/ns,count", "tflop16/s,gbyte/s,util",
                                     "time/s,cpu_time/us,flop/s"])
def test_chosen_metrics_match_the_viewer(capsys, metrics):
    path = fixture("nested_scopes.hatchet")
    profile = read(path, metrics=metrics)
    assert profile.metrics == metrics.split(",")
    columns = metrics.split(",")
    assert profile_cells(profile, columns) == viewer_tree(capsys, "-m", metrics, path)


@pytest.mark.parametrize("pair", [("nested_scopes.hatchet", "other_run.hatchet"),
                                  ("proton_matmul.hatchet", "cycles.hatchet"),
                                  ("two_devices.hatchet", "amd_mi300x.hatchet")])
def test_several_files_merge_as_in_the_viewer(capsys, pair):
    paths = [fixture(p) for p in pair]
    profile = read(*paths)
    assert profile.sources == paths
    columns = _columns(profile)
    assert profile_cells(profile, columns) == viewer_tree(capsys, "-m", ",".join(columns), *paths)
    assert profile_cells(read(paths), columns) == profile_cells(profile, columns)  # a list too


@pytest.mark.parametrize("options", [{"include": "forward"}, {"exclude": "backward|save"},
                                     {"include": "attn", "exclude": "bwd"}])
def test_filters_match_the_viewer(capsys, options):
    path = fixture("nested_scopes.hatchet")
    profile = read(path, **options)
    argv = [a for key, flag in (("include", "-i"), ("exclude", "-e")) if key in options
            for a in (flag, options[key])]
    columns = _columns(profile)
    printed = viewer_tree(capsys, "-m", ",".join(columns), *argv, path)
    assert profile_cells(profile, columns) == printed
    assert len(printed) < len(read(path))


def test_metadata_scopes_hidden_unless_asked_as_in_the_viewer(capsys, tmp_path):
    meta = node("__proton_launch_metadata", {}, kernel("meta_kernel", 50))
    path = write(tmp_path / "m.hatchet", node("ROOT", {}, node("step", {}, kernel("k", 1000), meta)))
    hidden, shown = read(path), read(path, show_metadata=True)
    assert [v.name for v in hidden.nodes(kind="kernel")] == ["k"]
    assert {v.name for v in shown.nodes(kind="kernel")} == {"k", "meta_kernel"}
    for profile, extra in ((hidden, []), (shown, ["--show-metadata"])):
        columns = _columns(profile)
        assert profile_cells(profile, columns) == viewer_tree(capsys, "-m", ",".join(columns), *extra, path)


def test_part_files_and_folders_read_as_the_viewer_reads_them(capsys, tmp_path):
    write(tmp_path / "run.part1.hatchet", node("ROOT", {}, kernel("a", 1000), kernel("b", 10)))
    write(tmp_path / "run.part2.hatchet", node("ROOT", {}, kernel("a", 500, count=2)))
    run = str(tmp_path / "run.hatchet")  # absent: its parts are read
    profile = read(run, metrics="time/ns")
    assert profile.root.value("time (ns)") == 1510 and profile.node(["a"]).value("count") == 3
    assert profile_cells(profile, ["time/ns", "count"]) == viewer_tree(capsys, "-m", "time/ns,count", run)
    folder = read(tmp_path, metrics=["time/ns"])
    assert profile_cells(folder, ["time/ns", "count"]) == profile_cells(profile, ["time/ns", "count"])


@pytest.mark.parametrize("pair", [("nested_scopes.hatchet", "other_run.hatchet"),
                                  ("other_run.hatchet", "nested_scopes.hatchet")])
def test_diff_matches_the_viewers_diff_profile(capsys, pair):
    mine, theirs = (fixture(p) for p in pair)
    specs = "time/ms,time/%,count,util,tflop16/s"
    diff = read(mine, metrics=specs).diff(read(theirs, metrics=specs))
    assert diff.is_diff
    printed = viewer_tree(capsys, "-m", specs, "--diff-profile", theirs, mine)
    assert profile_cells(diff, specs.split(",")) == printed
    # a path works as well, read with the same columns and filters
    by_path = read(mine, metrics=specs).diff(theirs)
    assert profile_cells(by_path, specs.split(",")) == printed


def test_diff_of_a_profile_with_itself_is_zero():
    path = fixture("nested_scopes.hatchet")
    diff = read(path).diff(read(path))
    for view in diff.nodes():
        assert all(v in (0, None) for v in view.values.values()), view
        assert all(v == 0 for v in view.inclusive.values()), view


def test_top_is_the_viewers_print_sorted_order(capsys):
    path = fixture("nested_scopes.hatchet")
    profile = read(path)
    metric = "avg_time/us"
    printed = viewer_sorted(capsys, "-m", metric, path)
    integral = dict(zip(profile.metrics, profile._integral))[metric]
    kernels = [(cells, path) for cells, path in printed
               if profile.node(list(path)).kind == "kernel"]
    top = profile.top_nodes(100, metric=metric)
    assert [(cell(v.value(metric), integral), v.name) for v in top] == \
        [(cells[0], path[-1]) for cells, path in kernels]
    assert [v.path for v in top] == [path for _, path in kernels]
