"""Runtime environment variables (all FLAGTREE_PROFILER_*), read in one place.

The README's table of variables mirrors ENVIRONMENT below; a test keeps the two in step.
"""
import os

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
    "FLAGTREE_PROFILER_PERIODIC_S": "Seconds (> 0) between automatic parts: each open session writes <name>.part<k>.<ext> with what it collected since the previous part, then frees it.",
}

DEFAULT_BUFFER_SIZE = 8 << 20


def flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def disabled():
    return flag("FLAGTREE_PROFILER_DISABLE")


def buffer_size():
    raw = os.environ.get("FLAGTREE_PROFILER_BUFFER_SIZE", "").strip()
    if not raw:
        return DEFAULT_BUFFER_SIZE
    try:
        value = int(raw, 0)
    except ValueError:
        raise ValueError(f"FLAGTREE_PROFILER_BUFFER_SIZE must be a number of bytes, got {raw!r}") from None
    if value < 4096:
        raise ValueError(f"FLAGTREE_PROFILER_BUFFER_SIZE must be at least 4096 bytes, got {value}")
    return value


def nvtx_enabled():
    return os.environ.get("FLAGTREE_PROFILER_NVTX", "1").strip().lower() not in ("0", "false", "no", "off")


def periodic_seconds():
    """The FLAGTREE_PROFILER_PERIODIC_S interval, or None when unset."""
    raw = os.environ.get("FLAGTREE_PROFILER_PERIODIC_S", "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"FLAGTREE_PROFILER_PERIODIC_S must be a number of seconds, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"FLAGTREE_PROFILER_PERIODIC_S must be a positive number of seconds, got {raw!r}")
    return value


def buffer_limit():
    """FLAGTREE_PROFILER_BUFFER_LIMIT in bytes; 0 (the default) means no limit."""
    raw = os.environ.get("FLAGTREE_PROFILER_BUFFER_LIMIT", "").strip()
    if not raw:
        return 0
    try:
        value = int(raw, 0)
    except ValueError:
        raise ValueError(f"FLAGTREE_PROFILER_BUFFER_LIMIT must be a number of bytes, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"FLAGTREE_PROFILER_BUFFER_LIMIT must not be negative, got {value}")
    return value
