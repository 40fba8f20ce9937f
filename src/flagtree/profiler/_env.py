"""Runtime environment variables (all FLAGTREE_PROFILER_*), read in one place.

The README's table of variables mirrors ENVIRONMENT below; a test keeps the two in step.
"""
import os

from .ranks import excluded as _rank_excluded

ENVIRONMENT = {
    "FLAGTREE_PROFILER_DISABLE": "1 turns every profiler call into a cheap no-op (start returns -1).",
    "FLAGTREE_PROFILER_CUPTI_PATH": "Path of the libcupti to load; searched first.",
    "FLAGTREE_PROFILER_BUFFER_SIZE": "Bytes per vendor activity buffer (default 8388608 = 8 MiB).",
    "FLAGTREE_PROFILER_BACKEND": "Backend used when start() names none (else auto-selected).",
    "FLAGTREE_PROFILER_ROCTRACER_PATH": "Path of libroctracer64.so (the file or its folder); searched first.",
    "FLAGTREE_PROFILER_HOOK_INCLUDE": "With hook=\"triton\": regex; only matching kernel names get launch_metadata evaluated.",
    "FLAGTREE_PROFILER_HOOK_EXCLUDE": "With hook=\"triton\": regex; matching kernel names never get launch_metadata evaluated.",
    "FLAGTREE_PROFILER_BUFFER_LIMIT": "Most bytes of vendor activity buffers held at once (default 0 = no limit); past it buffer requests are declined and the records the vendor library drops are counted in dropped_records.",
    "FLAGTREE_PROFILER_NVTX": "0 stops torch.cuda.nvtx ranges from becoming scopes (default 1: range_push/range_pop/range enter and leave scopes).",
    "FLAGTREE_PROFILER_PCSAMPLING_INTERVAL": "PC sampling (backend cupti/cupti_pcsampling): log2 of the GPU cycles between samples, 5..31 (default 12); a mode's interval= wins.",
    "FLAGTREE_PROFILER_PCSAMPLING_KERNEL_ACTIVITY": "Debugging knob of PC sampling: kernel (trace kernels as CUPTI's serial KIND_KERNEL records while a sampling session is attached, as Proton does) or concurrent (default).",
    "FLAGTREE_PROFILER_PCSAMPLING_COLLECTION": "PC sampling: continuous (default; samples per kernel function, shared among its launches) or serialized (exact launch per sample; kernels run one at a time); a mode's collection= wins.",
    "FLAGTREE_PROFILER_INSTRUMENT_TRITON": "1 instruments Triton-language kernels under backend=\"instrumentation\" (mode triton=on does the same; Gluon kernels always are).",
    "FLAGTREE_PROFILER_PERIODIC_S": "Seconds (> 0) between automatic parts: each open session writes <name>.part<k>.<ext> with what it collected since the previous part, then frees it.",
    "FLAGTREE_PROFILER_RANKS": "Ranks that profile, e.g. 0,3-5 (default: all); the others behave as if FLAGTREE_PROFILER_DISABLE=1. A process without a rank is rank 0.",
    "FLAGTREE_PROFILER_GATHER": "1 sends every rank's profile files to the lowest profiled rank (rank 0) at finalize, through the initialised torch.distributed process group; a merged timeline is written there too.",
    "FLAGTREE_PROFILER_GATHER_TIMEOUT_S": "Seconds (> 0, default 300) the gather waits for a rank before naming it as missing and going on.",
    "FLAGTREE_PROFILER_COUNTER_RANGES": "With mode=\"metrics...\": kernel launches a counter data image holds before it is decoded (default 64, at least 1; the image takes from a few KB to ~0.7 MB per launch depending on the metrics).",
}

DEFAULT_BUFFER_SIZE = 8 << 20


def flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def disabled():
    # a rank left out by FLAGTREE_PROFILER_RANKS pays what a disabled profiler pays
    return flag("FLAGTREE_PROFILER_DISABLE") or _rank_excluded()


def gather_enabled():
    return flag("FLAGTREE_PROFILER_GATHER")


def gather_timeout():
    return _number("FLAGTREE_PROFILER_GATHER_TIMEOUT_S", float, "seconds", 300.0,
                   lambda v: 0 < v < float("inf"), "be a positive number of seconds")


def _number(name, parse, unit, default, valid, requirement):
    """The value of numeric variable `name` (parse(text)), `default` when unset; a ValueError
    naming the variable when it does not parse or fails `valid` (`requirement` says why)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of {unit}, got {raw!r}") from None
    if not valid(value):
        raise ValueError(f"{name} must {requirement}, got {raw!r}")
    return value


def buffer_size():
    return _number("FLAGTREE_PROFILER_BUFFER_SIZE", lambda raw: int(raw, 0), "bytes", DEFAULT_BUFFER_SIZE,
                   lambda v: v >= 4096, "be at least 4096 bytes")


def nvtx_enabled():
    return os.environ.get("FLAGTREE_PROFILER_NVTX", "1").strip().lower() not in ("0", "false", "no", "off")


def periodic_seconds():
    """The FLAGTREE_PROFILER_PERIODIC_S interval, or None when unset."""
    return _number("FLAGTREE_PROFILER_PERIODIC_S", float, "seconds", None,
                   lambda v: 0 < v < float("inf"), "be a positive number of seconds")


def buffer_limit():
    """FLAGTREE_PROFILER_BUFFER_LIMIT in bytes; 0 (the default) means no limit."""
    return _number("FLAGTREE_PROFILER_BUFFER_LIMIT", lambda raw: int(raw, 0), "bytes", 0,
                   lambda v: v >= 0, "not be negative")


DEFAULT_PCSAMPLING_INTERVAL = 12


def pcsampling_interval():
    return _number("FLAGTREE_PROFILER_PCSAMPLING_INTERVAL", int, "log2 cycles", DEFAULT_PCSAMPLING_INTERVAL,
                   lambda v: 5 <= v <= 31, "be between 5 and 31 (log2 of the cycles between samples)")


def pcsampling_collection():
    raw = os.environ.get("FLAGTREE_PROFILER_PCSAMPLING_COLLECTION", "").strip().lower() or "continuous"
    if raw not in ("continuous", "serialized"):
        raise ValueError(f"FLAGTREE_PROFILER_PCSAMPLING_COLLECTION must be continuous or serialized, got {raw!r}")
    return raw


def pcsampling_kernel_activity():
    """FLAGTREE_PROFILER_PCSAMPLING_KERNEL_ACTIVITY (debugging knob): concurrent (default) or kernel."""
    raw = os.environ.get("FLAGTREE_PROFILER_PCSAMPLING_KERNEL_ACTIVITY", "").strip().lower() or "concurrent"
    if raw not in ("concurrent", "kernel"):
        raise ValueError(f"FLAGTREE_PROFILER_PCSAMPLING_KERNEL_ACTIVITY must be concurrent or kernel, got {raw!r}")
    return raw


def counter_ranges():
    """FLAGTREE_PROFILER_COUNTER_RANGES: launches per counter data image (default 64)."""
    return _number("FLAGTREE_PROFILER_COUNTER_RANGES", lambda raw: int(raw, 0), "launches", 64,
                   lambda v: v >= 1, "be at least 1")
