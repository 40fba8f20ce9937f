"""The viewer's `util` with hardware counters: measured DRAM bytes (dram__bytes_read.sum +
dram__bytes_write.sum, nvidia backend mode="metrics=...") take the place of the `bytes` a
launch_metadata hook estimated; nodes without them keep using `bytes`."""
import pytest

from test_viewer_metrics import H100_BANDWIDTH, values
from viewer_helpers import H100, kernel, node


def test_util_uses_measured_dram_bytes_over_estimated_bytes(write_profile):
    measured = kernel("copy", 1_000_000, bytes=1e9, **{"dram__bytes_read.sum": 2e9, "dram__bytes_write.sum": 1e9})
    estimated = kernel("add", 1_000_000, bytes=1e9)
    path = write_profile([node("ROOT", {}, node("s", {}, measured, estimated)), H100])
    got = values(path, "util")
    assert got["copy"] == pytest.approx([3e9 / 1e-3 / H100_BANDWIDTH])
    assert got["add"] == pytest.approx([1e9 / 1e-3 / H100_BANDWIDTH])
    assert got["s"] == [None]  # a scope: util is shown on kernels only


def test_util_available_with_only_measured_bytes(write_profile):
    only = kernel("copy", 2_000_000, **{"dram__bytes_read.sum": 4e9})
    path = write_profile([node("ROOT", {}, only), H100])
    assert values(path, "util", "copy") == pytest.approx([4e9 / 2e-3 / H100_BANDWIDTH])
