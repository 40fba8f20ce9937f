"""Waiting for what the native idle clock's thread does (a suspend, a park, a let-go) a moment
after it is due, so tests poll the tracer's stats."""
import time

from flagtree.profiler import _native


def stats():
    return _native.nvidia.cupti_attach_stats()


def wait_until(done, timeout_s=10.0, poll_s=0.001):
    """Whether `done()` came true within `timeout_s` (a bound that ends at once when the code works)."""
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        time.sleep(poll_s)
    return done()


def wait_suspended(timeout):
    """Whether the tracer was suspended within `timeout` seconds."""
    return wait_until(lambda: stats()["suspended"], timeout, poll_s=0.01)
