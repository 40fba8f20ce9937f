"""The first views a new user asks for: times in the unit each reads best in, plain decimals
unless --sci asks for e-notation (then one notation a column), a profile without
device times still shows what it has, and util on a run without counted work shows '-'."""
import re

from viewer_helpers import kernel, node


def _rows(out):
    header, *lines = out.splitlines()
    return header, [line[:len(header)].split() for line in lines]


def test_default_times_take_the_unit_each_value_reads_best_in(viewer, write_profile):
    path = write_profile([node("ROOT", {}, kernel("a", 2_500_000_000), kernel("b", 75_360_000),
                               kernel("c", 33_000), kernel("d", 950)), {}])
    status, out, _ = viewer(path)
    assert status == 0
    assert out.splitlines()[0].split() == ["time"]
    assert [re.match(r"\s*(\S+ [a-z]+)  ", line).group(1) for line in out.splitlines()[1:]] == [
        "2.575 s", "2.500 s", "75.360 ms", "33.000 us", "950 ns"]


def test_a_named_unit_prints_plain_decimals_and_sci_asks_for_e_notation(viewer, write_profile):
    path = write_profile([node("ROOT", {}, kernel("a", 75_360_000), kernel("b", 33_000)), {}])
    _, out, _ = viewer("-m", "time/s", path)
    assert [row[0] for row in _rows(out)[1]] == ["0.07539", "0.07536", "0.00003300"]
    assert "e-" not in out and "e+" not in out
    _, out, _ = viewer("-m", "time/us", path)
    assert [row[0] for row in _rows(out)[1]] == ["75393.000", "75360.000", "33.000"]
    _, out, _ = viewer("--sci", "-m", "time/s", path)
    cells = [row[0] for row in _rows(out)[1]]
    assert cells == ["7.539e-02", "7.536e-02", "3.300e-05"]  # one notation for the column
    assert all(re.fullmatch(r"\d\.\d{3}e-0\d", c) for c in cells)


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
