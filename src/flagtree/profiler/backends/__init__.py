"""The backend registry: which backends exist, which run here, and automatic selection."""
import os

from .base import Backend, BackendUnavailable

# Every backend the spec names, with the state of its implementation in this build.
KNOWN_BACKENDS = ("nvidia", "cupti", "cupti_pcsampling", "roctracer", "instrumentation", "cann",
                  "mthreads", "tianshu", "interpreter")

# Triton target backend -> profiler backend.
_TARGET_TO_BACKEND = {"cuda": "nvidia", "hip": "roctracer", "npu": "cann", "musa": "mthreads",
                      "corex": "tianshu"}

_instances = {}


def _factories():
    from .interpreter import InterpreterBackend
    from .nvidia import NvidiaBackend
    from .roctracer import RoctracerBackend

    return {"nvidia": NvidiaBackend, "interpreter": InterpreterBackend, "roctracer": RoctracerBackend}


def implemented_backends():
    return tuple(_factories())


def get_backend(name):
    """The process-wide instance of backend `name`; a clear error for unknown or missing ones."""
    factories = _factories()
    if name not in factories:
        if name in KNOWN_BACKENDS:
            raise ValueError(f"backend {name!r} is not available in this version of flagtree.profiler; "
                             f"available: {', '.join(factories)}")
        raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(KNOWN_BACKENDS)}")
    if name not in _instances:
        _instances[name] = factories[name]()
    return _instances[name]


def select_backend():
    """The backend for start() without backend=: FLAGTREE_PROFILER_BACKEND, else Triton's target."""
    explicit = os.environ.get("FLAGTREE_PROFILER_BACKEND", "").strip()
    if explicit:
        return explicit
    from .interpreter import interpreter_active

    if interpreter_active():
        return "interpreter"
    try:
        from triton.runtime import driver

        target = driver.active.get_current_target().backend
    except Exception:  # no triton, or no device for its driver: fall back to NVIDIA's
        return "nvidia"
    return _TARGET_TO_BACKEND.get(target, target)


__all__ = ["Backend", "BackendUnavailable", "KNOWN_BACKENDS", "get_backend", "select_backend",
           "implemented_backends"]
