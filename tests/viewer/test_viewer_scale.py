"""Deep and wide profiles: no RecursionError, correct sums, bounded run time."""

import json

import pytest

from flagtree.profiler.viewer.render import INDENT_LEVELS

DEPTH = 5000


def deep_chain_text(depth):
    """A chain ROOT -> s1 -> ... -> k, built as text (json.dumps would recurse)."""
    opens = []
    for level in range(depth):
        name = "ROOT" if level == 0 else f"s{level}"
        opens.append('{"frame": {"name": "%s", "type": "function"}, '
                     '"metrics": {"time (ns)": 1, "count": 1}, "children": [' % name)
    leaf = ('{"frame": {"name": "k"}, "metrics": {"time (ns)": 1000, "count": 1, '
            '"device_id": 0, "device_type": 1}, "children": []}')
    return "[" + "".join(opens) + leaf + "]}" * depth + ", {}]"


@pytest.fixture(scope="module")
def deep_profile(tmp_path_factory):
    path = tmp_path_factory.mktemp("deep") / "deep.hatchet"
    path.write_text(deep_chain_text(DEPTH))
    return str(path)


def test_deep_profile_tree_with_depth_limit(viewer, deep_profile):
    status, out, err = viewer("-m", "time/ns,count", "-d", "2", deep_profile)
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "time/ns  count",
        f"   {1000 + DEPTH}   {DEPTH + 1}  ROOT",
        f"   {1000 + DEPTH - 1}   {DEPTH}  `- s1",
        f"   {1000 + DEPTH - 2}   {DEPTH - 1}     `- s2",
    ]


def test_deep_profile_full_tree(viewer, deep_profile):
    status, out, _ = viewer("-m", "count", deep_profile)
    lines = out.splitlines()
    assert status == 0 and len(lines) == DEPTH + 2
    # Guides for INDENT_LEVELS levels, then the extra depth as [+N]: lines stay short.
    assert lines[INDENT_LEVELS + 1].endswith("   " * (INDENT_LEVELS - 1) + f"`- s{INDENT_LEVELS}")
    assert lines[-1] == "    1  " + "   " * (INDENT_LEVELS - 1) + f"[+{DEPTH - INDENT_LEVELS}] `- k"
    assert max(map(len, lines)) < 3 * INDENT_LEVELS + 40


def test_deep_profile_sorted_filters_merge_and_diff(viewer, deep_profile):
    status, out, _ = viewer("--print-sorted", "-m", "time/ns", "-i", "^k$", "-e", "nothing",
                            "--diff-profile", deep_profile, deep_profile, deep_profile)
    assert status == 0
    # two copies merged, minus one copy
    row = out.splitlines()[1].strip()
    assert row.startswith("1000  s1 -> s2 -> ") and row.endswith(f"s{DEPTH - 1} -> k")


def test_wide_profile(viewer, write_profile):
    kids = [{"frame": {"name": f"k{i}"}, "metrics": {"time (ns)": i}, "children": []}
            for i in range(20000)]
    path = write_profile(json.dumps([{"frame": {"name": "ROOT"}, "metrics": {}, "children": kids}, {}]))
    status, out, _ = viewer("-m", "time/ns", "-t", "0.00009", path)
    lines = out.splitlines()
    assert status == 0
    assert lines[1] == f"{sum(range(20000))}  ROOT"
    # cutoff 0.00009 * 199990000 = 17999.1, so k18000..k19999 remain
    assert len(lines) == 2 + 2000
    assert lines[2] == "    19999  |- k19999" and lines[-1] == "    18000  `- k18000"
