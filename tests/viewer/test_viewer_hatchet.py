"""Every fixture is also readable by llnl-hatchet (the format's reference reader)."""

import json

import pytest

from viewer_helpers import FIXTURE_NAMES, fixture

hatchet = pytest.importorskip("hatchet")


def test_fixture_list_is_complete():
    assert {"proton_matmul.hatchet", "nested_scopes.hatchet", "two_devices.hatchet",
            "cycles.hatchet", "other_run.hatchet", "amd_mi300x.hatchet"} <= set(FIXTURE_NAMES)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_hatchet_reads_fixture(name):
    with open(fixture(name)) as handle:
        data = json.load(handle)
    # from_literal takes a list of roots; data[0] is our single root.
    graph = hatchet.GraphFrame.from_literal([data[0]])
    names = set(graph.dataframe["name"])
    assert "ROOT" in names
    stack, expected = [data[0]], set()
    while stack:
        current = stack.pop()
        expected.add(current["frame"]["name"])
        stack.extend(current.get("children", []))
    assert names == expected
