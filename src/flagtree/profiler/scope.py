"""Scopes and states: user annotations of the shadow context.

A scope nests (each thread its own stack) and may carry metrics that add up per scope node;
a state is not recursive: the innermost one becomes a node directly above each kernel.
Both are context managers and decorators. Entering and leaving is one native call each, and a
name is interned once per process: scopes sit on the user's hot path, often around every
launch, so they cost about as much as the launch hook itself.

FLAGTREE_PROFILER_DISABLE is read when this module is imported.
"""
import functools
import numbers

from . import _env

try:
    from . import _native
except ImportError as _error:  # tools that only read profiles (the viewer) work without it

    class _MissingNative:
        def __init__(self, error):
            self.error = error

        def __getattr__(self, name):
            raise ImportError(f"flagtree.profiler's native module is missing ({self.error}); "
                              f"install the package with pip install .")

    _native = _MissingNative(_error)

_DISABLED = _env.disabled()
_ids = {}  # name -> interned id


def _intern(name):
    found = _ids.get(name)
    if found is None:
        found = _ids[name] = _native.intern(name)
    return found


def _metric_items(metrics):
    if not isinstance(metrics, dict):
        raise TypeError(f"scope metrics must be a dict of name -> int/float, got {type(metrics).__name__}")
    items = []
    for key, value in metrics.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"scope metric {key!r} must map a name to an int or float, got {value!r}")
        items.append((key, float(value)))
    return items


def _check_name(kind, name):
    if type(name) is not str:
        raise TypeError(f"{kind} name must be a string, got {name!r}")


class _Annotation:
    """Shared by scope and state: the decorator form opens a fresh annotation per call."""

    __slots__ = ()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper


class scope(_Annotation):
    """with scope("name", {"bytes": 1000}): ...  or  @scope("name") on a function."""

    __slots__ = ("name", "_id", "_metrics")
    _cpu_timed = False

    def __init__(self, name, metrics=None):
        _check_name("scope", name)
        self.name = name
        self._metrics = _metric_items(metrics) if metrics else None
        self._id = 0 if _DISABLED else _intern(name)

    def __enter__(self):
        if _DISABLED:
            return self
        if self._metrics:
            _native.scope_enter_metrics(self._id, self._metrics)
        else:
            _native.scope_enter(self._id)
        return self

    def __exit__(self, *exc):
        if not _DISABLED:
            _native.scope_exit(self._cpu_timed)
        return False


class cpu_timed_scope(scope):
    """A scope that also adds its CPU (wall) time to the scope node as cpu_time (ns)."""

    __slots__ = ()
    _cpu_timed = True


def enter_scope(name, metrics=None):
    scope(name, metrics).__enter__()


def exit_scope(name=None, cpu_timed=False):
    """Leaves the innermost scope (`name` is accepted for symmetry with enter_scope)."""
    if not _DISABLED:
        _native.scope_exit(cpu_timed)


class state(_Annotation):
    """with state("name"): ... ; kernels launched inside get a node "name" directly above them."""

    __slots__ = ("name", "_id")

    def __init__(self, name):
        _check_name("state", name)
        self.name = name
        self._id = 0 if _DISABLED else _intern(name)

    def __enter__(self):
        if not _DISABLED:
            _native.state_push(self._id)
        return self

    def __exit__(self, *exc):
        if not _DISABLED:
            _native.state_pop()
        return False


def enter_state(name):
    state(name).__enter__()


def exit_state(name=None):
    if not _DISABLED:
        _native.state_pop()
