"""Fixtures of the device_timer ring tests: a host ring (the CPU stand-in of the device) and our
native function installed as Triton's profile allocator."""
import pytest

from flagtree.profiler import _native
from support.triton_needs import skip_without_compiler_hooks


@pytest.fixture
def ring():
    """Starts a host ring: start(slots, batch, offset_ns=0, graph_records=..., ...); stopped
    (drained) after the test."""
    def start(slots, batch, offset_ns=0, **graph):
        _native.testing.device_timer_host_ring(slots, batch, offset_ns, **graph)
    yield start
    if _native.device_timer.device_timer_running():
        _native.testing.device_timer_host_hold(False)
        _native.testing.device_timer_host_sync_fails(False)
        _native.device_timer.device_timer_free()


@pytest.fixture
def allocator():
    skip_without_compiler_hooks()  # Triton's profile allocator (3.5) and the route's hooks (3.6)
    from triton.runtime import _allocation

    previous = _allocation._profile_allocator.get()
    _native.device_timer.device_timer_set_fallback(previous)
    _allocation.set_profile_allocator(_native.device_timer.device_timer_allocate)
    yield
    _allocation.set_profile_allocator(previous)


@pytest.fixture(autouse=True)
def timer_sourced_sessions(monkeypatch):
    """The host ring stands in for the device_timer backend's CUDA ring; the interpreter
    backend's sessions stand in for its sessions, so they take the device timer's records."""
    from flagtree.profiler.backends.interpreter import InterpreterBackend

    monkeypatch.setattr(InterpreterBackend, "time_source_kind", "device_timer")
