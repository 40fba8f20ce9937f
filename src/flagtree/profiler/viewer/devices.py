"""Device lookup and the peak-throughput table used by the ``util`` metric.

Peak figures are dense (no sparsity) vendor numbers in TFLOP/s per operand
width; memory bandwidth is computed from the profile's device_info because it
differs between boards of one architecture (H100 SXM vs H200, for example).
"""

import re

# device_type metric value -> device_info key
DEVICE_KINDS = {1: "CUDA", 0: "HIP", 2: "CPU", 3: "NPU", 4: "MUSA"}

# Dense peak TFLOP/s by flops width. Widths a chip lacks natively use the
# next wider format it runs them with (A100 runs fp8 work as fp16).
PEAK_TFLOPS = {
    "sm80": {8: 312.0, 16: 312.0, 32: 19.5, 64: 19.5},  # A100 SXM
    "sm89": {8: 733.0, 16: 362.1, 32: 91.6, 64: 1.4},  # L40S
    "sm90": {8: 1978.9, 16: 989.4, 32: 67.0, 64: 67.0},  # H100 SXM / H200
    "sm100": {8: 4500.0, 16: 2250.0, 32: 80.0, 64: 40.0},  # B200
    "gfx90a": {8: 383.0, 16: 383.0, 32: 47.9, 64: 47.9},  # MI250X
    "gfx942": {8: 2614.9, 16: 1307.4, 32: 163.4, 64: 81.7},  # MI300X
}

FLOP_WIDTHS = (8, 16, 32, 64)


def arch_key(kind, arch):
    """Normalise a device_info arch ('90', 'sm_90a', 'gfx942:xnack-') to a table key."""
    text = str(arch).strip().lower()
    if text.startswith("gfx"):
        return text.split(":", 1)[0]
    match = re.match(r"^(?:sm_?)?(\d+)", text)
    if match and kind != "HIP":
        return "sm" + match.group(1)
    return text


class Device:
    """Peak figures of one device; a ``None`` peak means 'unknown'."""

    def __init__(self, kind, index, props):
        self.kind = kind
        self.index = index
        self.arch = arch_key(kind, props.get("arch", ""))
        self.peak_flops = {w: t * 1e12 for w, t in PEAK_TFLOPS.get(self.arch, {}).items()}
        self.bandwidth = _bandwidth(props)

    @property
    def known(self):
        return bool(self.peak_flops) or self.bandwidth is not None

    def describe(self):
        return f"{self.kind}:{self.index} arch {self.arch or '?'}"


def _bandwidth(props):
    # DDR memory moves data on both clock edges, hence the factor 2.
    clock_khz = props.get("memory_clock_rate")
    bus_bits = props.get("bus_width")
    if not isinstance(clock_khz, (int, float)) or not isinstance(bus_bits, (int, float)):
        return None
    if clock_khz <= 0 or bus_bits <= 0:
        return None
    return 2 * clock_khz * 1e3 * bus_bits / 8


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
        kind = DEVICE_KINDS.get(int(metrics.get("device_type", 1)))
        index = str(int(metrics.get("device_id", 0)))
        return self.devices.get((kind, index))

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
