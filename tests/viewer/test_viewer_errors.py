"""Bad input gives exactly one error line on stderr and exit status 2."""

import pytest

from viewer_helpers import fixture, node

NESTED = fixture("nested_scopes.hatchet")
PREFIX = "flagtree-profiler-viewer: error: "


def one_error_line(result):
    status, out, err = result
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(PREFIX), err
    assert "Traceback" not in err
    return err[len(PREFIX):].rstrip("\n")


def test_missing_file(viewer, tmp_path):
    missing = tmp_path / "nope.hatchet"
    message = one_error_line(viewer(missing))
    assert message == f"cannot read profile '{missing}': No such file or directory"


def test_directory_instead_of_file(viewer, tmp_path):
    message = one_error_line(viewer(tmp_path))
    assert message.startswith(f"cannot read profile '{tmp_path}': ")


def test_unreadable_file(viewer, write_profile):
    import os

    path = write_profile("[]")
    os.chmod(path, 0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as a user who can read any file")
        assert one_error_line(viewer(path)) == f"cannot read profile '{path}': Permission denied"
    finally:
        os.chmod(path, 0o644)


def test_truncated_json(viewer, write_profile):
    text = open(NESTED).read()
    path = write_profile(text[: len(text) // 2])
    message = one_error_line(viewer(path))
    assert message.startswith(f"'{path}' is not valid JSON (")


def test_empty_file(viewer, write_profile):
    path = write_profile("")
    assert one_error_line(viewer(path)) == (
        f"'{path}' is not valid JSON (Expecting value at line 1 column 1)"
    )


def test_binary_garbage(viewer, tmp_path):
    path = tmp_path / "garbage.hatchet"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert one_error_line(viewer(path)).startswith(f"'{path}' is not valid JSON")


@pytest.mark.parametrize("content,why", [
    ({"frame": {"name": "ROOT"}}, "expected a JSON list [root, device_info]"),
    ([], "expected a JSON list [root, device_info]"),
    ([1, 2, 3], "expected a JSON list [root, device_info]"),
    ([42, {}], "a node is not a JSON object"),
    ([{"metrics": {}}, {}], "a node has no frame name"),
    ([{"frame": {"name": 5}}, {}], "a node has no frame name"),
    ([node("ROOT", {}), []], "device_info (second element) is not an object"),
    ([{"frame": {"name": "ROOT"}, "metrics": [1]}, {}], "node 'ROOT' has non-object metrics"),
    ([node("ROOT", {"time (ns)": "fast"}), {}], "metric 'time (ns)' of node 'ROOT' is not a number"),
    ([{"frame": {"name": "ROOT"}, "children": {}}, {}], "a node's children is not a list"),
    ([node("ROOT", {}, 7), {}], "a node is not a JSON object"),
])
def test_json_that_is_not_a_profile(viewer, write_profile, content, why):
    path = write_profile(content)
    assert one_error_line(viewer(path)) == f"'{path}' is not a tree profile: {why}"


def test_second_file_bad_names_that_file(viewer, write_profile):
    path = write_profile("{", name="broken.hatchet")
    assert f"'{path}' is not valid JSON" in one_error_line(viewer(NESTED, path))


def test_unknown_metric_lists_available(viewer):
    message = one_error_line(viewer("-m", "time/ms,cycles", NESTED))
    assert message == (
        f"metric 'cycles' is not in profile {NESTED}; it has: "
        "bytes, count, cpu_time (ns), flops16, flops32, time (ns)"
    )


def test_derived_metric_missing_its_input(viewer):
    message = one_error_line(viewer("-m", "time/ms", fixture("cycles.hatchet")))
    assert message == (
        f"metric 'time/ms' needs 'time (ns)', which is not in profile "
        f"{fixture('cycles.hatchet')}; it has: cycles, normalized_cycles"
    )


@pytest.mark.parametrize("spec,needs", [
    ("tflop8/s", "flops8"), ("cpu_time/s", "cpu_time (ns)"), ("gbyte/s", "bytes"),
])
def test_derived_metric_missing_flops_or_bytes(viewer, write_profile, spec, needs):
    path = write_profile([node("ROOT", {"time (ns)": 10, "count": 1}), {}])
    assert one_error_line(viewer("-m", spec, path)) == (
        f"metric '{spec}' needs '{needs}', which is not in profile {path}; it has: count, time (ns)"
    )


@pytest.mark.parametrize("spec,allowed", [
    ("time/h", "s, ms, us, ns or %"), ("avg_time/%", "s, ms, us or ns"), ("cpu_time/min", "s, ms, us or ns"),
])
def test_unknown_unit(viewer, spec, allowed):
    unit = spec.split("/")[1]
    assert one_error_line(viewer("-m", spec, NESTED)) == (
        f"unknown unit '{unit}' in metric '{spec}' (use {allowed})"
    )


def test_identifier_metric_rejected(viewer):
    assert one_error_line(viewer("-m", "device_id", NESTED)) == (
        "metric 'device_id' is a device identifier, not a value to show"
    )


def test_empty_metric_rejected(viewer):
    assert one_error_line(viewer("-m", "time/ms,,count", NESTED)) == "empty metric name in --metrics"


def test_util_without_device_info(viewer, write_profile):
    path = write_profile([node("ROOT", {"time (ns)": 5, "flops16": 9}), {}])
    assert one_error_line(viewer("-m", "util", path)) == (
        f"metric 'util' needs peak figures for a device, but profile {path} has devices: none"
    )


def test_util_unknown_architecture(viewer, write_profile):
    path = write_profile([node("ROOT", {"time (ns)": 5, "flops16": 9}), {"CUDA": {"0": {"arch": "75"}}}])
    assert one_error_line(viewer("-m", "util", path)).endswith("has devices: CUDA:0 arch sm75")


def test_bad_include_regex(viewer):
    assert one_error_line(viewer("-i", "(", NESTED)) == (
        "invalid --include regex '(': missing ), unterminated subpattern at position 0"
    )


def test_bad_exclude_regex(viewer):
    assert one_error_line(viewer("-e", "[a-", NESTED)).startswith("invalid --exclude regex '[a-': ")


@pytest.mark.parametrize("depth,why", [("-1", "must not be negative"), ("two", "expected a whole number >= 0")])
def test_bad_depth(viewer, depth, why):
    assert one_error_line(viewer(f"--depth={depth}", NESTED)) == f"invalid --depth '{depth}': {why}"


@pytest.mark.parametrize("value,why", [
    ("-0.1", "must be between 0 and 1"), ("1.5", "must be between 0 and 1"),
    ("nan", "must be between 0 and 1"), ("lots", "expected a number"),
])
def test_bad_threshold(viewer, value, why):
    assert one_error_line(viewer(f"--threshold={value}", NESTED)) == f"invalid --threshold '{value}': {why}"


def test_bad_diff_profile(viewer, tmp_path):
    missing = tmp_path / "other.hatchet"
    assert one_error_line(viewer("--diff-profile", missing, NESTED)) == (
        f"cannot read profile '{missing}': No such file or directory"
    )


def test_diff_profile_missing_metric(viewer):
    message = one_error_line(viewer("-m", "time/ms", "--diff-profile", fixture("cycles.hatchet"), NESTED))
    assert message.startswith("metric 'time/ms' needs 'time (ns)', which is not in profile ")


@pytest.mark.parametrize("argv", [[], ["-f", "weird", NESTED], ["--bogus", NESTED], ["-m"]])
def test_usage_errors_exit_2(viewer, argv):
    status, out, err = viewer(*argv)
    assert status == 2 and out == ""
    assert err.startswith("usage: flagtree-profiler-viewer")
    assert "flagtree-profiler-viewer: error: " in err
