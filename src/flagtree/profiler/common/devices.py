"""Device lookup and the peak-throughput table used by the ``util`` metric.

Peaks are dense (no structured sparsity) matrix/tensor-core FLOP/s, per device as Triton
sees it (one MI250X is two devices, one per GCD), for the dtype ``flops<width>`` counts:
8 = fp8 (a chip without fp8 runs it as fp16), 16 = fp16/bf16, 32 = what ``tl.dot`` on fp32
uses by default (TF32 tensor cores on NVIDIA, the fp32 matrix cores on AMD, where Triton's
default input precision is IEEE), 64 = fp64 tensor/matrix cores (sm89 has none: its fp64
rate). Each row is the vendor's figure for a reference board; a device whose device_info
has ``num_sms`` and ``clock_rate`` is scaled by its units x clock against the reference, so
an H100 PCIe (114 SMs, 1755 MHz) gets 757 fp16 TFLOP/s, an RTX 4090 (128 SMs) 326, an
MI250 GCD (104 CUs) 181, without a row each.

Memory bandwidth comes from device_info: memory clock x bus width x transfers per clock.
CUDA reports half the data rate as the memory clock (x2); HIP reports the HBM clock, which
moves 2 bits per pin per clock on HBM2e (gfx90a) but 4 on HBM3/HBM3E (gfx942, gfx950): with
x2 everywhere an MI300X read 2.66 TB/s instead of its 5.3 TB/s, and utilization twice the
truth.
"""

import math
import re

# device_type metric value -> device_info key
DEVICE_KINDS = {1: "CUDA", 0: "HIP", 2: "CPU", 3: "NPU", 4: "MUSA", 5: "COREX"}

FLOP_WIDTHS = (8, 16, 32, 64)


class Peak:
    """Dense TFLOP/s by width for a reference board with ``units`` SMs/CUs at ``clock_mhz``
    (None: scale by units only, the clock CUDA reports for it not being pinned down)."""

    def __init__(self, units, clock_mhz, tflops):
        self.units, self.clock_mhz, self.tflops = units, clock_mhz, tflops


PEAKS = {
    # NVIDIA A100 Tensor Core GPU datasheet (SXM, 108 SMs, 1410 MHz): FP16/BF16 312, TF32 156,
    # FP64 Tensor 19.5 dense TFLOPS; no FP8 (runs as FP16).
    "sm80": Peak(108, 1410, {8: 312.0, 16: 312.0, 32: 156.0, 64: 19.5}),
    # NVIDIA L40S datasheet (142 SMs, 2520 MHz boost): FP8 733, FP16/BF16 362.05, TF32 183
    # dense TFLOPS (the larger figures there are with sparsity); FP64 1/64 of FP32 91.6.
    "sm89": Peak(142, 2520, {8: 733.0, 16: 362.05, 32: 183.0, 64: 1.4}),
    # NVIDIA H100 Tensor Core GPU datasheet (SXM5, 132 SMs, 1980 MHz as CUDA reports it; H200
    # has the same figures): FP8 1978.9, FP16/BF16 989.4, TF32 494.7, FP64 Tensor 67 dense.
    "sm90": Peak(132, 1980, {8: 1978.9, 16: 989.4, 32: 494.7, 64: 67.0}),
    # NVIDIA DGX/HGX B200 datasheet, per GPU (148 SMs): FP8 4.5, FP16/BF16 2.25, TF32 1.1
    # dense PFLOPS (half the sparse figures), FP64 Tensor 40 TFLOPS.
    "sm100": Peak(148, None, {8: 4500.0, 16: 2250.0, 32: 1100.0, 64: 40.0}),
    # AMD Instinct MI250X data sheet: 383 FP16/BF16, 95.7 FP32 matrix, 95.7 FP64 matrix
    # TFLOPS for 220 CUs at 1700 MHz, i.e. two GCDs of 110 CUs; no FP8 (runs as FP16).
    "gfx90a": Peak(110, 1700, {8: 191.5, 16: 191.5, 32: 47.9, 64: 47.9}),
    # AMD Instinct MI300X data sheet (304 CUs, 2100 MHz): FP8 2614.9, FP16/BF16 1307.4, FP32
    # matrix 163.4, FP64 matrix 163.4 dense TFLOPS. MI300A/MI325X scale by their CUs.
    "gfx942": Peak(304, 2100, {8: 2614.9, 16: 1307.4, 32: 163.4, 64: 163.4}),
    # AMD Instinct MI355X data sheet (256 CUs, 2400 MHz): FP8 5033.2, FP16/BF16 2516.6, FP32
    # matrix 157.3, FP64 matrix 78.6 dense TFLOPS. MI350X (2200 MHz) scales by its clock.
    "gfx950": Peak(256, 2400, {8: 5033.2, 16: 2516.6, 32: 157.3, 64: 78.6}),
}

# Compatibility view: {arch: {width: reference TFLOP/s}}.
PEAK_TFLOPS = {arch: dict(peak.tflops) for arch, peak in PEAKS.items()}

# Memory transfers per reported memory clock (see the module docstring). AMD Instinct data
# sheets: MI250X 3.2768 TB/s (1.6384 per GCD, 4096 bits at 1.6 GHz x2), MI300X 5.3 TB/s
# (8192 bits at 1.3 GHz x4), MI355X 8 TB/s (HBM3E, x4). CUDA: H100 SXM 3.35 TB/s = 5120 bits
# at 2619 MHz x2.
TRANSFERS_PER_CLOCK = {"gfx942": 4, "gfx950": 4}
DEFAULT_TRANSFERS = 2


def arch_key(kind, arch):
    """Normalise a device_info arch ('90', 'sm_90a', 'gfx942:xnack-') to a table key."""
    text = str(arch).strip().lower()
    if text.startswith("gfx"):
        return text.split(":", 1)[0]
    match = re.match(r"^(?:sm_?)?(\d+)", text)
    if match and kind != "HIP":
        return "sm" + match.group(1)
    return text


def _positive(value):
    """A finite number > 0 (not a bool), as float; else None."""
    if type(value) not in (int, float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and number > 0 else None


def _scale(peak, props):
    """Device units x clock over the reference board's; 1.0 where device_info lacks them."""
    units = _positive(props.get("num_sms"))
    if units is None:
        return 1.0
    scale = units / peak.units
    clock_khz = _positive(props.get("clock_rate"))
    if peak.clock_mhz is not None and clock_khz is not None:
        scale *= clock_khz / 1e3 / peak.clock_mhz
    return scale if math.isfinite(scale) else 1.0


class Device:
    """Peak figures of one device; a ``None`` peak means 'unknown'."""

    def __init__(self, kind, index, props):
        self.kind = kind
        self.index = index
        self.arch = arch_key(kind, props.get("arch", ""))
        peak = PEAKS.get(self.arch)
        self.peak_flops = {}
        if peak is not None:
            scale = _scale(peak, props)
            self.peak_flops = {w: t * 1e12 * scale for w, t in peak.tflops.items()}
        self.bandwidth = peak_bandwidth(self.arch, props)

    @property
    def known(self):
        return bool(self.peak_flops) or self.bandwidth is not None

    def describe(self):
        return f"{self.kind}:{self.index} arch {self.arch or '?'}"


def peak_bandwidth(arch, props):
    """DRAM peak in bytes/s of a device_info entry of table key ``arch`` (see :func:`arch_key`),
    or None where device_info lacks the memory clock or the bus width. The one place this is
    computed: the viewer's ``util`` and the peaks backends write into the metadata agree."""
    clock_khz = _positive(props.get("memory_clock_rate"))
    bus_bits = _positive(props.get("bus_width"))
    if clock_khz is None or bus_bits is None:
        return None
    transfers = TRANSFERS_PER_CLOCK.get(arch, DEFAULT_TRANSFERS)
    bandwidth = transfers * clock_khz * 1e3 * bus_bits / 8
    return bandwidth if math.isfinite(bandwidth) else None


class DeviceTable:
    """All devices in a profile's device_info, addressable by metric values."""

    def __init__(self, device_info):
        self.devices = {}
        for kind, entries in device_info.items():
            if not isinstance(entries, dict):
                continue
            for index, props in entries.items():
                if isinstance(props, dict):
                    self.devices[(kind, str(index))] = Device(kind, str(index), props)

    def lookup(self, metrics):
        """The device a node's identifier metrics point at, or None."""
        if "device_type" not in metrics and "device_id" not in metrics:
            return None
        kind = DEVICE_KINDS.get(metrics.get("device_type", 1))
        return self.devices.get((kind, str(metrics.get("device_id", 0))))

    def default(self):
        """The only device, used for nodes with no identifiers of their own."""
        known = [d for d in self.devices.values() if d.known]
        return known[0] if len(known) == 1 else None

    def any_known(self):
        return any(d.known for d in self.devices.values())

    def describe(self):
        if not self.devices:
            return "none"
        return ", ".join(d.describe() for d in self.devices.values())
