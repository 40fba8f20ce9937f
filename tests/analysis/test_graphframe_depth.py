"""to_graphframe() warns when the profile is deeper than hatchet's recursive calls can walk, and
says nothing on an ordinary one; the warning is true: hatchet's tree() fails at that depth."""
import json
import sys
import warnings

import pytest

from flagtree.profiler import read

pytest.importorskip("hatchet")


def _chain(tmp_path, depth):
    """ROOT > s0 > ... > s<depth-1> > k, its JSON written without recursing."""
    kernel = json.dumps({"frame": {"name": "k", "type": "function", "kind": "kernel"},
                         "metrics": {"count": 1, "time (ns)": 5, "device_id": 0, "device_type": 2}, "children": []})
    opening = "".join('{"frame": {"name": "s%d", "type": "function", "kind": "scope"}, "metrics": {}, "children": ['
                      % level for level in range(depth))
    path = tmp_path / "chain.hatchet"
    path.write_text('[{"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": [' + opening
                    + kernel + "]}" * depth + "]}, {}]")
    return str(path)


def test_a_deep_profile_warns_and_hatchet_indeed_recurses_too_deep(tmp_path):
    limit = sys.getrecursionlimit()
    with pytest.warns(UserWarning, match="levels deep: hatchet's tree"):
        graph = read(_chain(tmp_path, limit + 50)).to_graphframe()
    with pytest.raises(RecursionError):
        graph.tree()


def test_an_ordinary_profile_does_not_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = read(_chain(tmp_path, 50)).to_graphframe()
    assert "s49" in graph.tree()
