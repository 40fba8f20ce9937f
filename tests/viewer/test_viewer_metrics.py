"""Unit conversions and derived metrics checked against hand-computed numbers."""

import pytest

from flagtree.profiler.common.devices import PEAK_TFLOPS, DeviceTable, arch_key
from flagtree.profiler.viewer.metrics import bind, parse_metrics
from flagtree.profiler.viewer.profile_tree import compute_inclusive, load_profile
from flagtree.profiler.viewer.render import format_float, format_integral
from viewer_helpers import H100, fixture, kernel, node

NESTED = fixture("nested_scopes.hatchet")
H100_BANDWIDTH = 2 * 2619000e3 * 6144 / 8  # bytes/s from device_info


def _computed(path, spec):
    """(profile, node_values) with the metrics of `spec` computed through the library."""
    profile = load_profile(path)
    metrics = parse_metrics(spec, profile.names, profile.device_info, path)
    for hook in {m.prepare for m in metrics if m.prepare}:
        hook(profile.root, profile.device_info)
    keys, node_values = bind(metrics)
    compute_inclusive(profile.root, keys)
    return profile, node_values


def _nodes(root):
    stack = [root]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children.values())


def values(path, spec, name=None):
    """{node name: [values]} for one profile, computed through the library."""
    profile, node_values = _computed(path, spec)
    out = {node.name: node_values(node, profile.root) for node in _nodes(profile.root)}
    return out if name is None else out[name]


def _kernel_values(path, spec):
    """{path of names: values} for the kernels of a profile (names may repeat across scopes)."""
    profile, node_values = _computed(path, spec)
    return {tuple(node.path_names()): node_values(node, profile.root) for node in _nodes(profile.root) if node.kernel}


def test_time_units():
    got = values(NESTED, "time/s,time/ms,time/us,time/ns", "attn_fwd")
    assert got == pytest.approx([1e-3, 1.0, 1000.0, 1_000_000])


def test_time_percent_of_root():
    got = values(NESTED, "time/%")
    assert got["ROOT"] == [100.0]
    assert got["forward"] == pytest.approx([40.0])
    assert got["/home/u/app.py:80@save"] == pytest.approx([15.0])


def test_avg_time_and_count():
    got = values(NESTED, "avg_time/ns,avg_time/us,count", "layernorm_kernel")
    assert got == pytest.approx([750_000, 750.0, 4])
    assert values(NESTED, "avg_time/ms", "ROOT") == pytest.approx([1.0])


def test_cpu_time_is_inclusive():
    got = values(NESTED, "cpu_time/us,cpu_time/s", "/home/u/app.py:42@main")
    assert got == pytest.approx([5300.0, 0.0053])


def test_tflop16_of_8192_matmul_in_one_ms():
    got = values(fixture("proton_matmul.hatchet"), "tflop16/s,gflop16/s,flop16/s", "matmul_kernel")
    expected = 2 * 8192**3 / 1e-3
    assert got == pytest.approx([expected / 1e12, expected / 1e9, expected])
    assert got[0] == pytest.approx(1099.511627776)


def test_flops_all_widths_sum():
    root = values(NESTED, "flop/s,tflop/s,flop32/s", "ROOT")
    total = 137438953472 + 274877906944 + 40_000_000_000 + 10_000_000_000
    assert root == pytest.approx([total / 0.01, total / 0.01 / 1e12, 5e12])


def test_byte_rates():
    got = values(NESTED, "byte/s,gbyte/s,tbyte/s", "layernorm_kernel")
    assert got == pytest.approx([2e12, 2000.0, 2.0])


def test_util_against_sm90_table():
    got = values(NESTED, "util")
    flop_util = 137438953472 / 1e-3 / 989.4e12
    byte_util = 1e9 / 1e-3 / H100_BANDWIDTH
    assert got["attn_fwd"] == pytest.approx([max(flop_util, byte_util)])
    assert got["layernorm_kernel"] == pytest.approx([6e9 / 3e-3 / H100_BANDWIDTH])
    assert got["reduce_kernel"] == pytest.approx([1e10 / 5e-4 / 494.7e12])  # flops32: TF32 peak
    assert got["ROOT"] == [None]  # util is a kernel's figure, as in Proton
    assert got["forward"] == [None]


def test_util_proton_matmul_above_one():
    got = values(fixture("proton_matmul.hatchet"), "util")
    assert got["matmul_kernel"] == pytest.approx([2 * 8192**3 / 1e-3 / 989.4e12])
    assert got["add_kernel"] == pytest.approx([6e8 / 2.5e-4 / (2 * 2619000e3 * 5120 / 8)])


def test_util_two_devices_each_with_its_own_peak():
    got = values(fixture("two_devices.hatchet"), "util")
    kernels = _kernel_values(fixture("two_devices.hatchet"), "util")
    assert kernels[("rank0", "gemm_kernel")] == pytest.approx([0.5])  # 494.7 of 989.4 TFLOP/s, sm90
    assert kernels[("rank1", "gemm_kernel")] == pytest.approx([0.5])  # 156 of 312 TFLOP/s, sm80
    assert got["rank0"] == got["rank1"] == got["ROOT"] == [None]


def test_util_amd_mi300x():
    got = values(fixture("amd_mi300x.hatchet"), "util,tflop8/s")
    assert got["fp8_gemm"] == pytest.approx([0.5, 1307.45])
    # HBM3 moves 4 bits per pin per reported clock: 1.3 GHz x 8192 bits x 4 = 5.3 TB/s
    assert got["vector_add"] == pytest.approx([1e9 / 5e-4 / (4 * 1.3e9 * 8192 / 8), None])


def test_util_kernel_without_device_ids_uses_only_device(write_profile):
    lone = node("k", {"time (ns)": 1_000_000, "flops64": 33.5e9}, kind="kernel")
    path = write_profile([node("ROOT", {}, lone), H100])
    assert values(path, "util", "k") == pytest.approx([0.5])


def test_rates_are_none_without_time(write_profile):
    path = write_profile([node("ROOT", {}, node("a", {"time (ns)": 0, "flops16": 5, "count": 0})), {}])
    assert values(path, "tflop16/s,avg_time/ns,time/%", "a") == [None, None, None]


def test_peak_table_has_required_architectures():
    assert PEAK_TFLOPS["sm90"][16] == pytest.approx(989.4)
    assert PEAK_TFLOPS["sm90"][8] == pytest.approx(1978.9)
    assert PEAK_TFLOPS["sm90"][32] == pytest.approx(494.7)  # TF32, tl.dot's default for fp32
    assert PEAK_TFLOPS["sm90"][64] == pytest.approx(67.0)
    assert PEAK_TFLOPS["gfx942"] == pytest.approx({8: 2614.9, 16: 1307.4, 32: 163.4, 64: 163.4})
    assert {"sm80", "sm89", "sm100", "gfx90a", "gfx950"} <= set(PEAK_TFLOPS)


@pytest.mark.parametrize("kind,arch,key", [
    ("CUDA", "90", "sm90"), ("CUDA", 80, "sm80"), ("CUDA", "sm_90a", "sm90"),
    ("HIP", "gfx942:sramecc+:xnack-", "gfx942"), ("HIP", "gfx942", "gfx942"),
])
def test_arch_key(kind, arch, key):
    assert arch_key(kind, arch) == key


def test_device_table_lookup():
    table = DeviceTable({"CUDA": {"0": {"arch": "90", "memory_clock_rate": 2619000, "bus_width": 6144}},
                         "HIP": {"0": {"arch": "gfx942"}}})
    cuda = table.lookup({"device_type": 1, "device_id": 0})
    assert cuda.arch == "sm90" and cuda.bandwidth == pytest.approx(H100_BANDWIDTH)
    assert table.lookup({"device_type": 0, "device_id": 0}).bandwidth is None
    assert table.lookup({"time (ns)": 1}) is None
    assert table.default() is None  # two devices: no single default


def test_user_metric_by_name(write_profile):
    path = write_profile([node("ROOT", {}, node("a", {"my metric": 2.5}, node("b", {"my metric": 1}))), {}])
    assert values(path, "my metric", "a") == [3.5]


@pytest.mark.parametrize("value,text", [
    (None, "-"), (0, "0.000"), (0.25, "0.250"), (1234.5678, "1234.568"),
    (0.0015, "0.001500"), (3.2e12, "3200000000000.000"), (-2.5, "-2.500"), (-0.000012345, "-0.00001234"),
    (2.5e15, "2.500e+15"),
])
def test_format_float(value, text):
    assert format_float(value) == text


@pytest.mark.parametrize("value,text", [(7, "7"), (7.0, "7"), (2.5, "2.500"), (None, "-")])
def test_format_integral(value, text):
    assert format_integral(value) == text


def test_kernel_helper_device_ids_are_not_summed(write_profile):
    path = write_profile([node("ROOT", {}, kernel("a", 5, device=3), kernel("b", 7, device=3)), {}])
    profile = load_profile(path)
    compute_inclusive(profile.root)
    assert profile.root.incl == {"time (ns)": 12, "count": 2}
