"""The backend registry: which backends exist, which run here, and automatic selection.

Every backend, the package's own and one a program adds, is known through register_backend():
its name, its class (imported when first asked for, so that the first session does not import
all ten), the Triton targets it is chosen for, and its extension of `flagtree-profiler`.
"""
import importlib
import importlib.util

from .. import _env
from .base import Backend, BackendUnavailable


class Registration:
    """factory: the Backend subclass, or "module:Class" (module relative to this package).
    targets: Triton targets (``target.backend``) this backend is chosen for. claims:
    "module:function" asked with Triton's target before the targets are (a device that reports
    another vendor's target). cli_extension: the module of its `flagtree-profiler` options
    (cli/extension.py says what it provides). likely: "module:function" asked, without importing
    Triton, whether this machine is one the backend would be chosen on (the command prepares its
    process for it, before_command(), when no backend is named). A plain class: the package's
    import makes ten."""
    __slots__ = ("factory", "targets", "claims", "cli_extension", "likely")

    def __init__(self, factory, targets=(), claims=None, cli_extension=None, likely=None):
        self.factory, self.targets, self.claims, self.cli_extension = factory, tuple(targets), claims, cli_extension
        self.likely = likely


_REGISTRY = {}
_instances = {}


def register_backend(name, factory, *, targets=(), claims=None, cli_extension=None, likely=None):
    """Makes backend `name` known to start(backend=...), available_backends() and the command.
    `factory`: a subclass of Backend (backends/base.py, the contract) or "module:Class"."""
    if not name or not isinstance(name, str):
        raise ValueError(f"a backend name must be a non-empty string, got {name!r}")
    if name in _REGISTRY:
        raise ValueError(f"backend {name!r} is registered already")
    if not isinstance(factory, str) and not (isinstance(factory, type) and issubclass(factory, Backend)):
        raise TypeError(f"backend {name!r}: factory must be a Backend subclass or 'module:Class', got {factory!r}")
    _REGISTRY[name] = Registration(factory, tuple(targets), claims, cli_extension, likely)


def unregister_backend(name):
    """Forgets a backend register_backend() added (its instance too)."""
    if name in KNOWN_BACKENDS:
        raise ValueError(f"backend {name!r} is one of this package's own and stays registered")
    _REGISTRY.pop(name, None)
    _instances.pop(name, None)


for _name, _factory_text, _options in (
        ("nvidia", ".nvidia.backend:NvidiaBackend", {"targets": ("cuda",), "cli_extension": ".nvidia.metrics_cli"}),
        ("cupti", ".nvidia.cupti:CuptiBackend", {}),
        ("cupti_pcsampling", ".nvidia.cupti:CuptiPcSamplingBackend", {}),
        ("roctracer", ".roctracer:RoctracerBackend", {"targets": ("hip",)}),
        ("instrumentation", ".instrumentation:InstrumentationBackend", {}),
        ("cann", ".cann.backend:CannBackend", {"targets": ("npu",), "likely": ".cann:ascend_installed"}),
        ("mthreads", ".mthreads.backend:MthreadsBackend", {"targets": ("musa",)}),
        ("tianshu", ".tianshu.backend:TianshuBackend",
         {"targets": ("corex",), "claims": ".tianshu:is_corex", "cli_extension": ".tianshu.ixkn_cli"}),
        ("interpreter", ".interpreter:InterpreterBackend", {}),
        ("device_timer", ".device_timer:DeviceTimerBackend", {})):
    register_backend(_name, _factory_text, **_options)

# The backends this package ships.
KNOWN_BACKENDS = tuple(_REGISTRY)


def _load(text):
    module, _, attribute = text.partition(":")
    return getattr(importlib.import_module(module, __name__), attribute)


def registrations():
    """{name: Registration} of every known backend, in registration order."""
    return dict(_REGISTRY)


def available_backends():
    """{backend: None if it can run here, else why not}, for every known backend."""
    return {name: get_backend(name).unavailable_reason() for name in _REGISTRY}


def get_backend(name):
    """The process-wide instance of backend `name`; a clear error for an unknown one."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(_REGISTRY)}")
    if name not in _instances:
        factory = _REGISTRY[name].factory
        _instances[name] = (_load(factory) if isinstance(factory, str) else factory)()
    return _instances[name]


def command_backend(named):
    """The backend `flagtree-profiler` prepares its process for (before_command()): the one named,
    else the first whose registration's `likely` says this machine is its (None: none does). The
    command asks before its target starts, so nothing here imports Triton."""
    if named:
        return named if named in _REGISTRY else None
    return next((name for name, r in _REGISTRY.items() if r.likely and _load(r.likely)()), None)


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
    for name, registration in _REGISTRY.items():
        if registration.claims and _load(registration.claims)(target):
            return name
    return next((name for name, r in _REGISTRY.items() if target.backend in r.targets), target.backend)


__all__ = ["Backend", "BackendUnavailable", "KNOWN_BACKENDS", "get_backend", "select_backend",
           "available_backends", "register_backend", "unregister_backend", "registrations", "command_backend"]
