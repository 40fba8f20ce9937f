"""The peak table behind `util`: dense per-device figures, scaled by units x clock."""

import pytest

from flagtree.profiler.common.devices import Device


def _device(kind, arch, **props):
    return Device(kind, "0", {"arch": arch, **props})


@pytest.mark.parametrize("kind,arch,props,width,tflops", [
    ("CUDA", "90", {"num_sms": 132, "clock_rate": 1980000}, 16, 989.4),   # H100 SXM / H200
    ("CUDA", "90", {"num_sms": 114, "clock_rate": 1755000}, 16, 757.4),   # H100 PCIe (vendor 756)
    ("CUDA", "89", {"num_sms": 142, "clock_rate": 2520000}, 16, 362.05),  # L40S
    ("CUDA", "89", {"num_sms": 128, "clock_rate": 2520000}, 16, 326.4),   # RTX 4090: ~330, not 733
    ("CUDA", "80", {"num_sms": 108, "clock_rate": 1410000}, 8, 312.0),    # no fp8: fp16 rate
    ("CUDA", "100", {"num_sms": 148, "clock_rate": 1965000}, 16, 2250.0),  # SMs only
    ("HIP", "gfx90a", {"num_sms": 110, "clock_rate": 1700000}, 16, 191.5),  # one MI250X GCD
    ("HIP", "gfx90a", {"num_sms": 104, "clock_rate": 1700000}, 16, 181.05),  # one MI250 GCD
    ("HIP", "gfx942", {"num_sms": 304, "clock_rate": 2100000}, 64, 163.4),  # MI300X fp64 matrix
    ("HIP", "gfx942", {"num_sms": 228, "clock_rate": 2100000}, 16, 980.6),  # MI300A
    ("HIP", "gfx950:sramecc+", {"num_sms": 256, "clock_rate": 2400000}, 8, 5033.2),  # MI355X
    ("HIP", "gfx950", {}, 16, 2516.6),  # no units or clock: the reference figure
])
def test_peak_per_device(kind, arch, props, width, tflops):
    assert _device(kind, arch, **props).peak_flops[width] / 1e12 == pytest.approx(tflops, rel=2e-3)


@pytest.mark.parametrize("props", [{"num_sms": float("nan")}, {"num_sms": -3}, {"num_sms": True},
                                   {"num_sms": 10 ** 400}, {"clock_rate": "fast"}])
def test_odd_units_fall_back_to_the_reference(props):
    assert _device("CUDA", "90", **props).peak_flops[16] / 1e12 == pytest.approx(989.4)


@pytest.mark.parametrize("kind,arch,clock_khz,bus_bits,tb_per_s", [
    ("CUDA", "90", 2619000, 5120, 3.35),   # H100 SXM
    ("HIP", "gfx90a", 1600000, 4096, 1.64),  # one MI250X GCD (3.28 TB/s per board)
    ("HIP", "gfx942", 1300000, 8192, 5.3),   # MI300X: HBM3, 4 transfers per reported clock
    ("HIP", "gfx950", 2000000, 8192, 8.2),   # MI355X: 8 TB/s
])
def test_bandwidth(kind, arch, clock_khz, bus_bits, tb_per_s):
    device = _device(kind, arch, memory_clock_rate=clock_khz, bus_width=bus_bits)
    assert device.bandwidth / 1e12 == pytest.approx(tb_per_s, rel=0.02)


@pytest.mark.parametrize("clock", [0, -1, float("inf"), float("nan"), None, "x", 1e308])
def test_odd_memory_figures_mean_unknown(clock):
    device = _device("CUDA", "90", memory_clock_rate=clock, bus_width=1e308)
    assert device.bandwidth is None
