"""The backend registry: which backends exist, which run here, and automatic selection."""
import importlib
import importlib.util
from .. import _env
from .base import Backend, BackendUnavailable

# Every backend the spec names, with the state of its implementation in this build.
KNOWN_BACKENDS = ("nvidia", "cupti", "cupti_pcsampling", "roctracer", "instrumentation", "cann",
                  "mthreads", "tianshu", "interpreter", "device_timer")

# Triton target backend -> profiler backend.
_TARGET_TO_BACKEND = {"cuda": "nvidia", "hip": "roctracer", "npu": "cann", "musa": "mthreads",
                      "corex": "tianshu"}

_instances = {}


# backend -> (module, class): a backend's module is imported when it is asked for, so that the
# first session does not import all nine (importing them all would lengthen the first start).
_CLASSES = {"nvidia": (".nvidia.backend", "NvidiaBackend"), "interpreter": (".interpreter", "InterpreterBackend"),
            "roctracer": (".roctracer", "RoctracerBackend"), "cupti": (".nvidia.cupti", "CuptiBackend"),
            "cupti_pcsampling": (".nvidia.cupti", "CuptiPcSamplingBackend"),
            "instrumentation": (".instrumentation", "InstrumentationBackend"),
            "mthreads": (".vendor.mthreads", "MthreadsBackend"), "cann": (".vendor.cann", "CannBackend"),
            "tianshu": (".vendor.tianshu", "TianshuBackend"),
            "device_timer": (".device_timer", "DeviceTimerBackend")}


def _factory(name):
    module, cls = _CLASSES[name]
    return getattr(importlib.import_module(module, __name__), cls)


def implemented_backends():
    return tuple(_CLASSES)


def available_backends():
    """{backend: None if it can run here, else why not}, for every backend the spec names."""
    report = {}
    for name in KNOWN_BACKENDS:
        if name in _CLASSES:
            report[name] = get_backend(name).unavailable_reason()
        else:
            report[name] = "not implemented in this version of flagtree.profiler"
    return report


def _available_here():
    """The implemented backends that can run on this machine, as a phrase."""
    here = [name for name, reason in available_backends().items() if reason is None]
    if "interpreter" not in here and importlib.util.find_spec("triton") is not None:
        here.append("interpreter (with TRITON_INTERPRET=1)")  # off now, but one variable away
    return ", ".join(here) or "none"


def get_backend(name):
    """The process-wide instance of backend `name`; a clear error for unknown or missing ones."""
    if name not in _CLASSES:
        if name in KNOWN_BACKENDS:
            raise ValueError(f"backend {name!r} is not implemented in this version of flagtree.profiler; "
                             f"implemented: {', '.join(_CLASSES)}; available here: {_available_here()}")
        raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(KNOWN_BACKENDS)}")
    if name not in _instances:
        _instances[name] = _factory(name)()
    return _instances[name]


def select_backend():
    """The backend for start() without backend=: FLAGTREE_PROFILER_BACKEND, else Triton's target."""
    explicit = _env.backend()
    if explicit:
        return explicit
    from ..triton_glue.target import interpreter_active  # deferred: read only without an explicit backend

    if interpreter_active():
        return "interpreter"
    try:
        from ..triton_glue.target import current_target  # deferred: triton is heavy and optional

        target = current_target()
    except Exception:  # no triton, or no device for its driver: fall back to NVIDIA's
        return "nvidia"
    if target.backend == "cuda":
        from .vendor.corex import is_corex  # deferred: only a CUDA target asks

        if is_corex(target):
            return "tianshu"
    return _TARGET_TO_BACKEND.get(target.backend, target.backend)


__all__ = ["Backend", "BackendUnavailable", "KNOWN_BACKENDS", "get_backend", "select_backend",
           "implemented_backends", "available_backends"]
