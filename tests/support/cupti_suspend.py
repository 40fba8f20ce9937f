"""Waiting for CUPTI's suspend: the native idle clock's thread suspends the tracer a moment after
the idle time, so tests poll its stats."""
import time

from flagtree.profiler import _native


def stats():
    return _native.nvidia.cupti_attach_stats()


def wait_suspended(timeout):
    """Whether the tracer was suspended within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not stats()["suspended"] and time.monotonic() < deadline:
        time.sleep(0.01)
    return stats()["suspended"]
