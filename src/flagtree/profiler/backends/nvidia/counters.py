"""Hardware counters on the nvidia backend (mode "metrics=<list>"): CUPTI's Range Profiler in
auto-range + kernel-replay mode, one range per kernel launch, evaluated by CUPTI's Profiler Host API
(NVIDIA's metric evaluator). The native side (csrc/backends/counters) queues launches, decodes the
counter data image and attaches the values to the kernel nodes; this module parses the mode,
starts and stops a session's collection, and lists the metrics a chip offers.
"""
from dataclasses import dataclass

from ... import _env
from ...common.devices import arch_key, peak_bandwidth
from .. import get_backend
from ...native_core import native

# mode="metrics" alone: enough for the derived metrics (occupancy, DRAM bandwidth and its use).
DEFAULT_METRICS = (
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)
# dram_bandwidth needs the kernel's duration as the counters saw it (replay makes the activity
# record's duration a different run): added when both DRAM byte counts are asked for.
DURATION_METRIC = "gpu__time_duration.sum"
DERIVED_METRICS = ("achieved_occupancy (%)", "dram_bandwidth (GB/s)", "dram_bandwidth_util (%)")
MODE_FORMS = '"metrics" (a default set) or "metrics=<name>,<name>,..."'
LIST_HINT = "list the valid names with flagtree.profiler.list_metrics() or `flagtree-profiler --list-metrics`"


def parse_mode(mode):
    """The metric names of a "metrics[=a,b]" mode (a tuple), or None for any other mode."""
    if mode is None:
        return None
    text = mode.strip()
    if text == "metrics":
        return DEFAULT_METRICS
    if not text.startswith("metrics="):
        return None
    names = [n.strip() for n in text[len("metrics="):].split(",")]
    if not all(names):
        raise ValueError(f"mode {mode!r} has an empty metric name; use {MODE_FORMS}")
    names = list(dict.fromkeys(names))
    if "dram__bytes_read.sum" in names and "dram__bytes_write.sum" in names and DURATION_METRIC not in names:
        names.append(DURATION_METRIC)
    return tuple(names)


def normalized_mode(metrics):
    return "metrics=" + ",".join(metrics)


@dataclass(frozen=True)
class CounterMode:
    """The options of a "metrics[=...]" mode: the metric names to collect, in order."""
    metrics: tuple

    def canonical(self):
        return normalized_mode(self.metrics)


def dram_peaks_gbps(devices):
    """Each device's DRAM peak in GB/s (0.0 where unknown), by device index, as the viewer's
    ``util`` metric computes it (common/devices.py)."""
    peaks = []
    for d in sorted(devices, key=lambda d: d["index"]):
        bandwidth = peak_bandwidth(arch_key("CUDA", d.get("arch", "")), d)
        peaks.append(bandwidth / 1e9 if bandwidth else 0.0)
    return peaks


def start_session(library, session, metrics, devices):
    """Starts collecting `metrics` for `session` on the libcupti at `library`; `devices` (the
    backend's cached device list) gives each GPU's DRAM peak."""
    try:
        native.counters.counters_load(library)
    except RuntimeError as error:  # keeps the type (LibraryNotFound: CUPTI older than 12.6)
        raise type(error)(f"flagtree.profiler: {error}") from None
    context = native.counters.counters_current_context()
    try:
        native.counters.counters_add_session(library, session.slot, list(metrics), _env.counter_ranges(),
                                    dram_peaks_gbps(devices), context, -1)
    except ValueError as error:  # an unknown metric (the message says how to list them)
        raise ValueError(f"flagtree.profiler: {error}") from None
    except RuntimeError as error:  # keeps the type (Unsupported: not on this GPU)
        raise type(error)(f"flagtree.profiler: hardware counters cannot start: {error}") from None
    try:
        native.session.session_enable_extras(session.slot)
        native.session.session_set_mean_metrics(session.slot, native.counters.counters_mean_metrics())
    except BaseException:
        native.counters.counters_remove_session(session.slot)  # session.py will not call detach_session
        raise


def session_outputs(session, metrics):
    """Decodes what is still in the counter images (their metrics reach the kernel nodes) and
    returns the counts for the metadata file."""
    native.counters.counters_flush()
    stats = native.counters.counters_stats()
    out = {
        "counter_metrics": list(metrics),
        "counter_passes": stats["passes"],
        "counter_ranges": stats["ranges_collected"],
        "counter_ranges_dropped": stats["ranges_dropped"],
        "counter_launches_without_range": stats["launches_without_range"],
        "counter_ranges_without_launch": stats["ranges_without_launch"],
        "counter_range_name_mismatches": stats["range_name_mismatches"],
    }
    if stats["errors"]:
        out["counter_errors"] = stats["errors"]
    return out


def stop_session(session):
    native.counters.counters_remove_session(session.slot)


def list_metrics(chip=None, submetrics=False):
    """The hardware metrics of an NVIDIA chip, for start(backend="nvidia", mode="metrics=..."):
    a list of {"name", "type" (counter|ratio|throughput), "unit", "description"} per base metric,
    plus "submetrics" with submetrics=True: the full names to ask for (base + rollup/submetric,
    e.g. "dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"). `chip` (e.g. "GH100") defaults to GPU 0's chip; with a chip name no
    GPU is needed, only libcupti (CUPTI 12.6+)."""
    nvidia = get_backend("nvidia")
    library = nvidia.counters_library()
    try:
        metrics = _list_reinitialising(nvidia, library, chip, submetrics)
    except RuntimeError as error:
        raise RuntimeError(f"flagtree.profiler: cannot list hardware metrics: {error}") from None
    for m in metrics:
        if "submetrics" in m:
            m["submetrics"] = [_full_name(m["name"], s) for s in m["submetrics"]]
    return metrics


def _list_reinitialising(nvidia, library, chip, submetrics):
    try:
        return native.counters.counters_list_metrics(library, chip, submetrics)
    except native.NotInitialized:
        pass
    # A finished session ends with cuptiFinalize (so other tools can attach), after which CUPTI
    # answers NOT_INITIALIZED until a client subscribes again: subscribe briefly, then ask again.
    nvidia.acquire(None)
    try:
        return native.counters.counters_list_metrics(library, chip, submetrics)
    finally:
        nvidia.release()


def _full_name(base, sub):
    """CUPTI may give a submetric as a suffix (".sum", "sum") or as the full name."""
    if sub.startswith(base + ".") or sub == base:
        return sub
    return base + (sub if sub.startswith(".") else "." + sub)
