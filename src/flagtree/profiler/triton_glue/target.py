"""Triton's active driver, its target and device, and the compiler backends installed.

Every Triton we support (3.2-3.9) has ``triton.runtime.driver.active`` with
``get_current_target()`` / ``get_current_device()`` and ``triton.backends.backends`` (name ->
compiler and driver classes). On a machine without a device for the active driver these raise
(Triton's own error); callers decide what that means.
"""
import os


def interpreter_active():
    """Whether Triton runs kernels in its interpreter (TRITON_INTERPRET set to a true value, read
    as Triton 3.2-3.9 read it at import): no device, no launch hooks, no compiled kernels."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "yes", "on")


def _active_driver():
    from triton.runtime import driver  # deferred: triton is heavy and optional

    return driver.active


def current_target():
    """Triton's current target (``backend``, ``arch``, ``warp_size``): what kernels compile for."""
    return _active_driver().get_current_target()


def current_device_getter():
    """The active driver's ``get_current_device`` function (to be called per launch, e.g. by the
    native ring: it is bound once here)."""
    return _active_driver().get_current_device


def current_device_properties():
    """The current device's properties as Triton's driver reports them (``max_shared_mem``, ...)."""
    driver = _active_driver()
    return driver.utils.get_device_properties(driver.get_current_device())


def compiler_backends():
    """Triton's installed compiler backends: {name: backend with ``compiler`` and ``driver`` classes}."""
    from triton.backends import backends  # deferred: triton is heavy and optional

    return backends


def compiler_backend_for(target):
    """(name, backend) of the installed compiler backend that supports `target`, or None."""
    for name, backend in compiler_backends().items():
        if backend.compiler.supports_target(target):
            return name, backend
    return None
