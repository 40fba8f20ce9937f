"""Scopes and states: user annotations of the shadow context.

A scope nests (each thread its own stack) and may carry metrics that add up per scope node
(or, named with Proton's "(pty)"/"(exc)" suffixes, properties set on it);
a state is not recursive: the innermost one becomes a node directly above each kernel.
Both are context managers and decorators. Scopes sit on the user's hot path, often around every
step or launch: making, entering and leaving one are C calls with no Python frame (the native
base `_native.context.Scope`), and a name is interned once per process. What is rare (a new
name, metrics, a mismatched exit, the boundary hook) comes back to the functions here.

FLAGTREE_PROFILER_DISABLE is read when this module is imported.
"""
import functools
import numbers
import warnings

from .common.safe_text import is_utf8
from .distributed import ranks
from .native_core import native

_DISABLED = ranks.profiling_off()
_ids = {}  # name -> interned id; the native scope reads it and adds new names through _intern
_mismatch_warned = set()  # scope names whose mismatched exit was reported
#: Called after every scope boundary while backward-by-forward-layer attribution is on
#: (hooks/autograd.py sets it through set_boundary_hook); None otherwise.
_boundary_hook = None


def _intern(name):
    found = _ids.get(name)
    if found is None:
        _check_text("scope or state name", name)
        found = _ids[name] = native.core.intern(name)
    return found


def _check_text(what, text):
    """A name a profile can hold: UTF-8 text (a lone surrogate such as "\\ud800" is none)."""
    if not is_utf8(text):
        raise ValueError(f"{what} {text!r} holds a lone surrogate, which UTF-8 cannot encode: a profile cannot hold it")


# Proton's suffixes: "name (pty)" is a property (a number or a text; the last value given to a
# node stands), "name (exc)" an exclusive metric (a number adds up on its node as any metric does
# here, for every node's metrics are its own; a text is set as a property's). Both are written
# under the name without the suffix.
_SUFFIXES = ("(pty)", "(exc)")
# Keys the tree writes itself: a property of that name would repeat the key in a node's object.
_WRITTEN_KEYS = frozenset(("count", "time (ns)", "cpu_time (ns)", "device_id", "device_type"))


def _float64(key, value):
    """A metric's value as the float64 it is kept as. An int past float64's range is refused by
    name: float() would raise a bare OverflowError that names neither the metric nor the rule."""
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"scope metric {key!r}: an int of {value.bit_length()} bits is too large for a float64 "
                         f"(scope metrics are float64)") from None


def _metric_items(metrics):
    """(sums, properties) of a scope's metrics: [(name, float)] added up on the node, and
    [(name, float or str)] set on it, suffixes taken off."""
    if not isinstance(metrics, dict):
        raise TypeError(f"scope metrics must be a dict of name -> int/float, got {type(metrics).__name__}")
    sums = []
    properties = []
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise TypeError(f"scope metric names must be strings, got {key!r}")
        suffix = key[-5:] if key.endswith(")") else None
        if suffix not in _SUFFIXES:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                hint = ("; a text value needs a name ending in (pty) (a property) or (exc) (exclusive)"
                        if isinstance(value, str) else "")
                raise TypeError(f"scope metric {key!r} must map a name to an int or float, got {value!r}{hint}")
            _check_text("scope metric name", key)
            # A plain name is written as given: one the tree writes itself (a cpu-timed scope's
            # "cpu_time (ns)") would repeat a key in the node's object, or pass for a kernel count.
            if key in _WRITTEN_KEYS:
                raise ValueError(f"scope metric {key!r}: the name must be text other than "
                                 f"{', '.join(sorted(_WRITTEN_KEYS))} (which the profiler writes itself)")
            sums.append((key, _float64(key, value)))
            continue
        name = key[:-5].strip()
        if not name or name in _WRITTEN_KEYS:
            raise ValueError(f"scope metric {key!r}: the name before {suffix} must be text other than "
                             f"{', '.join(sorted(_WRITTEN_KEYS))} (which the profiler writes itself)")
        _check_text("scope metric name", name)
        if isinstance(value, str):
            _check_text(f"scope metric {key!r} value", value)
            properties.append((name, value))
        elif isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"scope metric {key!r} must map a name to an int, float or str, got {value!r}")
        elif suffix == "(exc)":
            sums.append((name, _float64(key, value)))
        else:
            properties.append((name, _float64(key, value)))
    return sums, properties


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


class _NoNativeScope:
    """The base of scope where the native module is missing: with profiling disabled a scope does
    nothing, as the native one would; otherwise making one raises the missing module's ImportError."""

    __slots__ = ("name",)

    def __init__(self, name, metrics=None):
        _check_name("scope", name)
        if metrics:
            _metric_items(metrics)
        self.name = name
        if not _DISABLED:
            native.context.Scope  # raises the ImportError

    def __enter__(self):
        return self

    def __exit__(self, exc_type=None, exc=None, traceback=None):
        return False


try:
    _ScopeBase = native.context.Scope
except ImportError:  # no native module built: a scope raises its ImportError when made
    _ScopeBase = _NoNativeScope


class scope(_ScopeBase, _Annotation):
    """with scope("name", {"bytes": 1000}): ...  or  @scope("name") on a function.

    scope(name, metrics=None) checks its arguments when made; one scope object may be entered any
    number of times, nested in itself too. Its entry and exit are the native base's."""

    __slots__ = ()


class cpu_timed_scope(scope):
    """A scope that also adds its CPU (wall) time to the scope node as cpu_time (ns)."""

    __slots__ = ()


def _warn_mismatch(expected, left, stacklevel=2):
    """A scope exit that left another scope than the one named: said once per name, at the line of
    the user's code (stacklevel 2 from the native scope's exit, which has no Python frame)."""
    if expected in _mismatch_warned:
        return
    _mismatch_warned.add(expected)
    if left == native.context.NO_SCOPE:
        found = "no scope was open on this thread"
    else:
        found = f"the innermost scope was {native.context.scope_name_of(left)!r}, which was left instead"
    warnings.warn(f"flagtree.profiler: leaving scope {expected!r}, but {found}; scopes must nest "
                  f"(enter_scope/exit_scope pairs and with-blocks on one thread)", RuntimeWarning,
                  stacklevel=stacklevel)


def set_boundary_hook(hook):
    """Sets what runs after every scope boundary (None: nothing), for exit_scope and native scopes."""
    global _boundary_hook
    _boundary_hook = hook
    native.context.scope_boundary_hook(hook)


def enter_scope(name, metrics=None):
    scope(name, metrics).__enter__()


def exit_scope(name=None, metrics=None, cpu_timed=False):
    """Leaves the innermost scope. `metrics` (as in scope()) are added to it on the way out;
    `name`, when given, is checked against the scope left (a mismatch warns once per name)."""
    if _DISABLED:
        return
    if name is not None:
        _check_name("scope", name)
        # Interned (and so checked: a lone surrogate is a ValueError) before the scope is left: a
        # call that raises must leave the stack as it was.
        expected = _intern(name)
    sums, properties = _metric_items(metrics) if metrics else ([], [])
    left = native.context.scope_exit_checked(cpu_timed, sums, properties)
    if name is not None and left != expected:
        _warn_mismatch(name, left, stacklevel=3)
    if _boundary_hook is not None:
        _boundary_hook()


class state(_Annotation):
    """with state("name"): ... ; kernels launched inside get a node "name" directly above them."""

    __slots__ = ("name", "_id")

    def __init__(self, name):
        _check_name("state", name)
        if not name:
            # "" interns to id 0, which the native core takes for "no state": its kernels would get no
            # node, and an enclosing state's would vanish too (a scope named "" is a node like any other).
            raise ValueError("state name must not be empty: a state is the node named after it above each kernel")
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
    """Leaves the innermost state. `name`, as Proton's callers may pass it, is checked to be a name
    and not matched: states are not recursive, the one left is the one entered last."""
    if name is not None:
        _check_name("state", name)
    if not _DISABLED:
        native.context.state_pop()


# What the native base needs of this module, handed over once its classes exist: the names known,
# the functions of its rare paths, which class times CPU, and whether profiling is off.
if _ScopeBase is not _NoNativeScope:
    native.context.scope_setup(ids=_ids, intern=_intern, metric_items=_metric_items, warn_mismatch=_warn_mismatch,
                               cpu_timed=cpu_timed_scope, disabled=_DISABLED)
