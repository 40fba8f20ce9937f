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
import warnings

from .distributed import ranks
from .native_core import native

_DISABLED = ranks.profiling_off()
try:  # looked up once: a scope's entry and exit sit between a step's synchronize and its next launch
    _scope_enter, _scope_leave = native.context.scope_enter, native.context.scope_leave
except ImportError:  # no native module built: a scope raises its ImportError when used

    def _scope_enter(name):
        native.context.scope_enter(name)

    def _scope_leave(cpu_timed):
        return native.context.scope_leave(cpu_timed)
_ids = {}  # name -> interned id
_mismatch_warned = set()  # scope names whose mismatched exit was reported
#: Called after every scope boundary while backward-by-forward-layer attribution is on
#: (hooks/autograd.py sets it); None otherwise, so the common path pays one test.
_boundary_hook = None


def _intern(name):
    found = _ids.get(name)
    if found is None:
        _check_text("scope or state name", name)
        found = _ids[name] = native.core.intern(name)
    return found


def _check_text(what, text):
    """A name a profile can hold: UTF-8 text (a lone surrogate such as "\\ud800" is none)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{what} {text!r} holds a lone surrogate, which UTF-8 cannot encode: "
                             f"a profile cannot hold it") from None


def _metric_items(metrics):
    if not isinstance(metrics, dict):
        raise TypeError(f"scope metrics must be a dict of name -> int/float, got {type(metrics).__name__}")
    items = []
    for key, value in metrics.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"scope metric {key!r} must map a name to an int or float, got {value!r}")
        _check_text("scope metric name", key)
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
        if type(name) is not str:
            _check_name("scope", name)
        self.name = name
        self._metrics = _metric_items(metrics) if metrics else None
        # A name seen before is one dict look-up: a scope is often made around every step or launch.
        self._id = 0 if _DISABLED else (_ids.get(name) or _intern(name))

    def __enter__(self):
        if _DISABLED:
            return self
        if self._metrics:
            native.context.scope_enter_metrics(self._id, self._metrics)
        else:
            _scope_enter(self._id)
        if _boundary_hook is not None:
            _boundary_hook()
        return self

    def __exit__(self, exc_type=None, exc=None, traceback=None):
        if not _DISABLED:
            left = _scope_leave(self._cpu_timed)
            if left != self._id:
                _warn_mismatch(self.name, left)
            if _boundary_hook is not None:
                _boundary_hook()
        return False


class cpu_timed_scope(scope):
    """A scope that also adds its CPU (wall) time to the scope node as cpu_time (ns)."""

    __slots__ = ()
    _cpu_timed = True


def _warn_mismatch(expected, left):
    """A scope exit that left another scope than the one named: said once per name."""
    if expected in _mismatch_warned:
        return
    _mismatch_warned.add(expected)
    if left == native.context.NO_SCOPE:
        found = "no scope was open on this thread"
    else:
        found = f"the innermost scope was {native.context.scope_name_of(left)!r}, which was left instead"
    warnings.warn(f"flagtree.profiler: leaving scope {expected!r}, but {found}; scopes must nest "
                  f"(enter_scope/exit_scope pairs and with-blocks on one thread)", RuntimeWarning, stacklevel=3)


def enter_scope(name, metrics=None):
    scope(name, metrics).__enter__()


def exit_scope(name=None, metrics=None, cpu_timed=False):
    """Leaves the innermost scope. `metrics` (as in scope()) are added to it on the way out;
    `name`, when given, is checked against the scope left (a mismatch warns once per name)."""
    if _DISABLED:
        return
    if name is not None:
        _check_name("scope", name)
    items = _metric_items(metrics) if metrics else []
    left = native.context.scope_exit_checked(cpu_timed, items)
    if name is not None and left != _intern(name):
        _warn_mismatch(name, left)
    if _boundary_hook is not None:
        _boundary_hook()


class state(_Annotation):
    """with state("name"): ... ; kernels launched inside get a node "name" directly above them."""

    __slots__ = ("name", "_id")

    def __init__(self, name):
        _check_name("state", name)
        self.name = name
        self._id = 0 if _DISABLED else _intern(name)

    def __enter__(self):
        if not _DISABLED:
            native.context.state_push(self._id)
        return self

    def __exit__(self, exc_type=None, exc=None, traceback=None):
        if not _DISABLED:
            native.context.state_pop()
        return False


def enter_state(name):
    state(name).__enter__()


def exit_state(name=None):
    if not _DISABLED:
        native.context.state_pop()
