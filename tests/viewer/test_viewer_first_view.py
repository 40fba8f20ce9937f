"""The first views a new user asks for: a column prints in one notation, a profile without
device times still shows what it has, and util on a run without counted work shows '-'."""
import re

from viewer_helpers import kernel, node


def _rows(out):
    header, *lines = out.splitlines()
    return header, [line[:len(header)].split() for line in lines]


def test_a_float_column_prints_in_one_notation(viewer, write_profile):
    path = write_profile([node("ROOT", {}, kernel("a", 75_360_000), kernel("b", 33_000_000)), {}])
    status, out, _ = viewer(path)
    assert status == 0
    cells = [row[0] for row in _rows(out)[1]]
    assert cells == ["1.084e-01", "7.536e-02", "3.300e-02"]
    fixed = [c for c in cells if re.fullmatch(r"-?\d+\.\d{3}", c)]
    assert not fixed or len(fixed) == len(cells)


def test_large_values_stay_fixed_when_the_whole_column_can(viewer, write_profile):
    path = write_profile([node("ROOT", {}, kernel("a", 2_500_000_000), kernel("b", 300_000_000)), {}])
    assert [row[0] for row in _rows(viewer(path)[1])[1]] == ["2.800", "2.500", "0.300"]


def test_a_profile_without_device_times_shows_its_stored_metrics(viewer, write_profile):
    path = write_profile([node("ROOT", {}, node("step", {"bytes": 5}, node("inner", {"bytes": 2}))), {}])
    status, out, err = viewer(path)
    assert status == 0, err
    header, rows = _rows(out)
    assert header.split() == ["bytes"]
    assert [row[0] for row in rows] == ["7", "7", "2"]


def test_a_given_metric_is_still_required(viewer, write_profile):
    path = write_profile([node("ROOT", {}, node("step", {"bytes": 5})), {}])
    status, _, err = viewer("-m", "time/ms", path)
    assert status == 2 and "metric 'time/ms' needs 'time (ns)'" in err


def test_util_without_counted_work_is_a_dash(viewer, write_profile):
    path = write_profile([node("ROOT", {}, node("a", {}, kernel("k", 2_000_000))), {}])
    status, out, err = viewer("-m", "time/ms,util", path)
    assert status == 0, err
    header, rows = _rows(out)
    assert header.split() == ["time/ms", "util"]
    assert [row[1] for row in rows] == ["-", "-", "-"]
