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
