"""A diff report opens with the biggest changes: kernels summed by name on both sides, largest
absolute change in total time first, a kernel on one side only marked new or gone."""
import json

from viewer_helpers import kernel, node


def payload_of(path):
    text = open(path, encoding="utf-8").read()
    marker = '<script id="report-data" type="application/json">'
    start = text.index(marker) + len(marker)
    return json.loads(text[start:text.index("</script>", start)])


def test_diff_report_opens_with_the_biggest_changes(viewer, write_profile, tmp_path):
    after = write_profile([node("ROOT", {}, node("a", {}, kernel("k1", 6_000_000, 2)), kernel("k1", 4_000_000, 1),
                                kernel("k2", 1_000_000)), {}], "after.hatchet")
    before = write_profile([node("ROOT", {}, kernel("k1", 4_000_000, 2), kernel("k3", 2_000_000)), {}],
                           "before.hatchet")
    out = tmp_path / "diff.html"
    status, _, err = viewer("--html", out, "--diff-profile", before, after)
    assert status == 0, err
    changes = payload_of(out)["summary"]["changes"]
    assert changes["head"][:5] == ["kernel", "this", "other", "change", "change %"]
    assert changes["rows"] == [
        ["k1", "10.000 ms", "4.000 ms", "+6.000 ms", "+150.0%", "3 / 2"],
        ["k3", "0 ns", "2.000 ms", "-2.000 ms", "gone", "0 / 1"],
        ["k2", "1.000 ms", "0 ns", "+1.000 ms", "new", "1 / 0"],
    ]
    assert changes["total"] == 3


def test_a_plain_report_has_no_changes_table(viewer, write_profile, tmp_path):
    out = tmp_path / "plain.html"
    assert viewer("--html", out, write_profile([node("ROOT", {}, kernel("k", 10)), {}]))[0] == 0
    assert "changes" not in payload_of(out)["summary"]
