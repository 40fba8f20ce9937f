"""Scopes and states: user annotations of the shadow context.

A scope nests (each thread its own stack) and may carry metrics that add up per scope node;
a state is not recursive: the innermost one becomes a node directly above each kernel.
Both are context managers and decorators. Entering and leaving is one native call each.
"""
import functools
import numbers

from . import _env


def _native():
    from . import _native as native

    return native


def _metric_items(metrics):
    if not metrics:
        return None
    if not isinstance(metrics, dict):
        raise TypeError(f"scope metrics must be a dict of name -> int/float, got {type(metrics).__name__}")
    items = []
    for key, value in metrics.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"scope metric {key!r} must map a name to an int or float, got {value!r}")
        items.append((key, float(value)))
    return items


class scope:
    """with scope("name", {"bytes": 1000}): ...  or  @scope("name") on a function."""

    _cpu_timed = False

    def __init__(self, name, metrics=None):
        if not isinstance(name, str):
            raise TypeError(f"scope name must be a string, got {name!r}")
        self.name = name
        self._metrics = _metric_items(metrics)
        self._disabled = _env.disabled()
        self._id = None if self._disabled else _native().intern(name)

    def __enter__(self):
        if self._disabled:
            return self
        native = _native()
        if self._metrics:
            native.scope_enter_metrics(self._id, self._metrics)
        else:
            native.scope_enter(self._id)
        return self

    def __exit__(self, *exc):
        if not self._disabled:
            _native().scope_exit(self._cpu_timed)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper


class cpu_timed_scope(scope):
    """A scope that also adds its CPU (wall) time to the scope node as cpu_time (ns)."""

    _cpu_timed = True


def enter_scope(name, metrics=None):
    scope(name, metrics).__enter__()


def exit_scope(name=None, cpu_timed=False):
    """Leaves the innermost scope (`name` is accepted for symmetry with enter_scope)."""
    if not _env.disabled():
        _native().scope_exit(cpu_timed)


class state:
    """with state("name"): ... ; kernels launched inside get a node "name" directly above them."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"state name must be a string, got {name!r}")
        self.name = name
        self._disabled = _env.disabled()
        self._id = None if self._disabled else _native().intern(name)

    def __enter__(self):
        if not self._disabled:
            _native().state_push(self._id)
        return self

    def __exit__(self, *exc):
        if not self._disabled:
            _native().state_pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper


def enter_state(name):
    state(name).__enter__()


def exit_state(name=None):
    if not _env.disabled():
        _native().state_pop()
