"""Parsing ``--metrics`` specs into value functions, including derived metrics.

A spec is a stored metric name (``count``, ``bytes``, ``cycles``...) or a
derived one (``time/ms``, ``time/%``, ``avg_time/us``, ``tflop16/s``,
``gbyte/s``, ``util``). :func:`bind` turns the parsed columns into the ordered stored keys
to sum (``compute_inclusive(root, keys)`` gives each node a list of sums in that order) and
one function ``values(node, root) -> [number or None per column]``. Nothing here raises on
odd numbers: zero, NaN, infinite or huge inputs give None, nan or inf, never an exception.
"""

import re
from collections import deque
from itertools import repeat

from ..common.devices import FLOP_WIDTHS, DeviceTable
from .errors import ViewerError
from .nodes import IDENTIFIERS

TIME = "time (ns)"
CPU_TIME = "cpu_time (ns)"
TIME_UNITS = {"s": 1e-9, "ms": 1e-6, "us": 1e-3, "ns": 1.0}
PREFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
FLOP_KEYS = {w: f"flops{w}" for w in FLOP_WIDTHS}
# DRAM traffic measured by hardware counters (nvidia backend, mode="metrics=..."): where a node
# has them, `util` uses them instead of the `bytes` a launch_metadata hook estimated.
MEASURED_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
# Internal per-node sums of "seconds the work would take at peak speed".
WORK_KEYS = frozenset(list(FLOP_KEYS.values()) + ["bytes"] + list(MEASURED_BYTES))
# Seconds the node's work would take at peak: FLOPs of every width (their times add up, as
# in Proton), and bytes moved.
UTIL_FLOPS, UTIL_BYTES = "__util_flops", "__util_bytes"
UTIL_KEYS = (UTIL_FLOPS, UTIL_BYTES)

_TIME_RE = re.compile(r"^(time|avg_time|cpu_time)/(.*)$")
_FLOP_RE = re.compile(r"^([kmgtp]?)flop(8|16|32|64)?/s$")
_BYTE_RE = re.compile(r"^([kmgtp]?)byte/s$")


class Metric:
    """One output column: its label and how to compute it from a node's inclusive sums.

    ``make(index)`` receives {stored key: position in the sums list} and returns
    ``compute(sums, root_sums) -> number or None``. ``kernels_only`` columns show '-' on
    scopes and ROOT.
    """

    def __init__(self, label, make, needs, integral=False, prepare=None, kernels_only=False, unit=None):
        self.label = label
        self.unit = unit  # "duration": nanoseconds, each shown in the unit it reads best in
        self.make = make
        self.needs = tuple(needs)
        self.integral = integral
        self.prepare = prepare
        self.kernels_only = kernels_only


class _Context:
    """What a spec is checked against: the profile's metric names and devices."""

    def __init__(self, names, devices, source):
        self.names = names
        self.devices = devices
        self.source = source

    def available(self):
        shown = sorted(n for n in self.names if n not in IDENTIFIERS and not n.startswith("__"))
        return ", ".join(shown) if shown else "no metrics"

    def require(self, spec, *keys):
        for key in keys:
            if key not in self.names:
                raise self.missing(spec, key)

    def missing(self, spec, key=None):
        needs = f" needs '{key}', which" if key and key != spec else ""
        return ViewerError(
            f"metric '{spec}'{needs} is not in profile {self.source}; it has: {self.available()}"
        )


def _raw(key, scale=1.0):
    def make(index):
        at = index[key]
        if scale == 1.0:
            return lambda incl, root: incl[at]

        def compute(incl, root):
            value = incl[at]
            return None if value is None else value * scale

        return compute

    return make


def _percent(key):
    def make(index):
        at = index[key]

        def compute(incl, root):
            value, total = incl[at], root[at]
            return None if value is None or not total else 100.0 * value / total

        return compute

    return make


def _seconds(time):
    """GPU time in seconds, or None where a rate over it is meaningless."""
    if not time:
        return None
    seconds = time * 1e-9
    return seconds if seconds else None  # a subnormal time underflows to 0.0


def _average(scale):
    def make(index):
        at_time, at_count = index[TIME], index["count"]

        def compute(incl, root):
            time, count = incl[at_time], incl[at_count]
            return None if time is None or not count else time / count * scale

        return compute

    return make


def _rate(keys, divisor):
    def make(index):
        at_time, ats = index[TIME], [index[k] for k in keys]
        if len(ats) == 1:
            at = ats[0]

            def compute_one(incl, root):
                value = incl[at]
                seconds = _seconds(incl[at_time])
                return None if value is None or seconds is None else value / seconds / divisor

            return compute_one

        def compute(incl, root):
            seconds = _seconds(incl[at_time])
            if seconds is None:
                return None
            values = [incl[at] for at in ats if incl[at] is not None]
            return sum(values) / seconds / divisor if values else None

        return compute

    return make


def _util_make(index):
    at_time, at_flops, at_bytes = index[TIME], index[UTIL_FLOPS], index[UTIL_BYTES]

    def compute(incl, root):
        flops, moved = incl[at_flops], incl[at_bytes]
        if flops is None and moved is None:
            return None
        seconds = _seconds(incl[at_time])
        if seconds is None:
            return None
        if flops is None or (moved is not None and moved > flops):
            return moved / seconds
        return flops / seconds

    return compute


def _time_metric(spec, family, unit, ctx):
    key = CPU_TIME if family == "cpu_time" else TIME
    if unit is None:  # `time`, `cpu_time`, `avg_time`: nanoseconds shown in a unit chosen per value
        metric = _time_metric(spec, family, "ns", ctx)
        metric.unit, metric.integral = "duration", False
        return metric
    if unit == "%" and family == "time":
        ctx.require(spec, key)
        return Metric(spec, _percent(key), [key])
    if unit not in TIME_UNITS:
        allowed = "s, ms, us, ns or %" if family == "time" else "s, ms, us or ns"
        raise ViewerError(f"unknown unit '{unit}' in metric '{spec}' (use {allowed})")
    scale = TIME_UNITS[unit]
    if family == "avg_time":
        ctx.require(spec, TIME, "count")
        return Metric(spec, _average(scale), [TIME, "count"], integral=unit == "ns")
    ctx.require(spec, key)
    return Metric(spec, _raw(key, scale), [key], integral=unit == "ns")


def _flop_metric(spec, prefix, width, ctx):
    ctx.require(spec, TIME)
    if width:
        keys = [FLOP_KEYS[int(width)]]
        ctx.require(spec, keys[0])
    else:
        keys = [k for k in FLOP_KEYS.values() if k in ctx.names]
        if not keys:
            raise ctx.missing(spec, "flops8/16/32/64")
    return Metric(spec, _rate(keys, PREFIXES[prefix]), [TIME] + keys)


def _no_value(index):
    return lambda incl, root: None


def _util_metric(spec, ctx):
    ctx.require(spec, TIME)
    if not any(k in ctx.names for k in list(FLOP_KEYS.values()) + ["bytes"] + list(MEASURED_BYTES)):
        # No node did any counted work (a CPU run, kernels without launch metadata): every
        # cell is '-', as util is on scopes, rather than the whole view refused.
        return Metric(spec, _no_value, (TIME,), kernels_only=True)
    if not ctx.devices.any_known():
        raise ViewerError(
            f"metric 'util' needs peak figures for a device, but profile {ctx.source} "
            f"has devices: {ctx.devices.describe()}"
        )
    return Metric(spec, _util_make, (TIME,) + UTIL_KEYS, prepare=annotate_util, kernels_only=True)


def parse_one(spec, ctx):
    """Turn one spec string into a Metric, or raise ViewerError."""
    if not spec:
        raise ViewerError("empty metric name in --metrics")
    if spec in IDENTIFIERS:
        raise ViewerError(f"metric '{spec}' is a device identifier, not a value to show")
    if spec in ctx.names:
        return Metric(spec, _raw(spec), [spec], integral=True)
    match = _TIME_RE.match(spec)
    if match:
        return _time_metric(spec, match.group(1), match.group(2), ctx)
    if spec in ("time", "avg_time", "cpu_time"):
        return _time_metric(spec, spec, None, ctx)
    match = _FLOP_RE.match(spec)
    if match:
        return _flop_metric(spec, match.group(1), match.group(2), ctx)
    match = _BYTE_RE.match(spec)
    if match:
        ctx.require(spec, TIME, "bytes")
        return Metric(spec, _rate(["bytes"], PREFIXES[match.group(1)]), [TIME, "bytes"])
    if spec == "util":
        return _util_metric(spec, ctx)
    raise ctx.missing(spec)


def parse_metrics(text, names, device_info, source):
    """Parse a comma-separated ``--metrics`` value against one profile. A list of specs is
    taken as it is (stored names may hold a comma or surrounding spaces)."""
    ctx = _Context(names, DeviceTable(device_info), source)
    specs = list(text) if isinstance(text, (list, tuple)) else [part.strip() for part in text.split(",")]
    return [parse_one(spec, ctx) for spec in specs]


def annotate_util(root, device_info):
    """Store each node's peak-normalised work so it sums like any metric."""
    table = DeviceTable(device_info)
    plans = {}
    fallback = _util_plan(table.default(), plans)
    stack = [(root, None)]
    while stack:  # top-down, so a node without identifiers inherits its ancestor's device
        node, device = stack.pop()
        metrics = node.metrics
        if node.kernel:
            device = table.lookup(metrics) or device
        if node.children:
            stack.extend([(child, device) for child in node.children.values()])
        if metrics.keys().isdisjoint(WORK_KEYS):
            continue  # most nodes: nothing to normalise
        plan = _util_plan(device, plans) or fallback
        flops = None
        for key, peak in plan:
            if key == "bytes":
                value = _measured_bytes(metrics)
                if value is None:
                    value = metrics.get("bytes")
                if value is not None:
                    metrics[UTIL_BYTES] = value / peak
            elif key in metrics:
                flops = (flops or 0.0) + metrics[key] / peak
        if flops is not None:
            metrics[UTIL_FLOPS] = flops


def _measured_bytes(metrics):
    """DRAM bytes read + written as the counters measured them, or None."""
    read, write = metrics.get(MEASURED_BYTES[0]), metrics.get(MEASURED_BYTES[1])
    if read is None:
        return write
    return read if write is None else read + write


def _util_plan(device, cache):
    """(stored metric, peak per second) pairs for one device."""
    if device is None:
        return ()
    if device not in cache:
        plan = [(FLOP_KEYS[w], p) for w, p in device.peak_flops.items() if p]
        if device.bandwidth:
            plan.append(("bytes", device.bandwidth))
        cache[device] = tuple(plan)
    return cache[device]


def usable_specs(names, device_info):
    """The derived specs that would work on a profile with these metrics."""
    specs = []
    if TIME in names:
        specs += ["time"] + [f"time/{u}" for u in TIME_UNITS] + ["time/%"]
        if "count" in names:
            specs += ["avg_time"] + [f"avg_time/{u}" for u in TIME_UNITS]
        widths = [w for w in FLOP_WIDTHS if FLOP_KEYS[w] in names]
        specs += [f"{p}flop{w}/s" for w in widths for p in ("", "g", "t")]
        if widths:
            specs += ["flop/s", "gflop/s", "tflop/s"]
        if "bytes" in names:
            specs += ["byte/s", "gbyte/s", "tbyte/s"]
        has_bytes = "bytes" in names or any(k in names for k in MEASURED_BYTES)
        if (widths or has_bytes) and DeviceTable(device_info).any_known():
            specs.append("util")
    if CPU_TIME in names:
        specs += ["cpu_time"] + [f"cpu_time/{u}" for u in TIME_UNITS]
    return specs


def prepare(metrics, root, device_info):
    """Run the metrics' pre-summing hooks (once each) on a tree."""
    for hook in {m.prepare for m in metrics if m.prepare is not None}:
        hook(root, device_info)


def needed_keys(metrics):
    """The stored metric names the chosen columns read, in a fixed order."""
    return sorted({key for metric in metrics for key in metric.needs})


def bind(metrics):
    """(keys to sum, ``values(node, root)``) for parsed columns; see the module docstring."""
    keys = needed_keys(metrics)
    index = {key: at for at, key in enumerate(keys)}
    columns = [(m.make(index), m.kernels_only) for m in metrics]
    if len(columns) == 1 and not columns[0][1]:
        compute = columns[0][0]
        return keys, lambda node, root: [compute(node.incl, root.incl)]

    def values(node, root):
        incl, root_incl, kernel = node.incl, root.incl, node.kernel
        return [None if only and not kernel else compute(incl, root_incl)
                for compute, only in columns]

    return keys, values


def fill_values(metrics, order, root):
    """Set ``node.values`` on every node of ``order`` (after compute_inclusive with
    needed_keys(metrics)): the numbers bind's ``values(node, root)`` gives one node at a
    time, computed a column at a time so the loops run in C (map) rather than per node."""
    keys = needed_keys(metrics)
    index = {key: at for at, key in enumerate(keys)}
    incls = [node.incl for node in order]
    root_incl = root.incl
    columns = []
    for metric in metrics:
        column = list(map(metric.make(index), incls, repeat(root_incl)))
        if metric.kernels_only:
            column = [value if node.kernel else None for value, node in zip(column, order)]
        columns.append(column)
    del incls
    # Tuples: read-only sequences, smaller than lists, and zip makes them without a copy.
    rows = [(value,) for value in columns[0]] if len(columns) == 1 else zip(*columns)
    deque(map(setattr, order, repeat("values"), rows), maxlen=0)
