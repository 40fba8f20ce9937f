"""Profiles written on the GPU machine (H200, Triton 3.6): one by Triton's own profiler
(Proton), one by this profiler, for the same workload (tests/gpu/workload.py)."""
import json

import pytest

from viewer_helpers import fixture

PROTON = fixture("proton_triton36_h200.hatchet")
OURS = fixture("flagtree_h200_workload.hatchet")


def rows(out):
    """{node name: [values...]} from the viewer's text tree."""
    table = {}
    for line in out.splitlines()[1:]:
        parts = line.split()
        table[parts[-1]] = [p for p in parts[:-1] if p not in ("|", "|-", "`-")]
    return table


def test_reads_real_proton_output_with_string_identifiers(viewer):
    # Proton 3.6 writes device_type "CUDA" and device_id "0" as strings.
    status, out, err = viewer("-m", "time/ns,count", PROTON)
    assert status == 0, err
    table = rows(out)
    assert table["add_kernel"] == ["3438078", "300"]
    assert table["copy_kernel"] == ["1107229", "200"]
    assert table["ROOT"] == [str(3438078 + 1107229 + 943583), "540"]


def test_same_workload_agrees_between_profilers(viewer):
    ours = rows(viewer("-m", "time/ns,count", OURS)[1])
    proton = rows(viewer("-m", "time/ns,count", PROTON)[1])
    assert {k: v[1] for k, v in ours.items()} == {k: v[1] for k, v in proton.items()}
    for name in ("add_kernel", "copy_kernel", "ROOT"):
        assert abs(int(ours[name][0]) - int(proton[name][0])) <= 0.05 * int(proton[name][0])


def test_merging_both_profiles_sums_counts(viewer):
    status, out, err = viewer("-m", "count", OURS, PROTON)
    assert status == 0, err
    assert rows(out)["add_kernel"] == ["600"] and rows(out)["ROOT"] == ["1080"]


def test_llnl_hatchet_reads_both():
    hatchet = pytest.importorskip("hatchet")
    for path in (OURS, PROTON):
        with open(path) as f:
            root = json.load(f)[0]
        frame = hatchet.GraphFrame.from_literal([root])
        assert "add_kernel" in set(frame.dataframe["name"])
