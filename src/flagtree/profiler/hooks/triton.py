"""hook="triton": a kernel's launch metadata becomes part of its profile.

A Triton kernel declared with ``@triton.jit(launch_metadata=fn)`` has ``fn(grid, metadata, args)``
evaluated before each launch while a session with ``hook="triton"`` is open; ``args`` maps the
kernel's argument names to the launch's values. What ``fn`` returns is attached to that launch:

* ``"name"`` (a string) renames the kernel's node in the tree;
* ``"flops8"``, ``"flops16"``, ``"flops32"``, ``"flops64"`` and ``"bytes"`` are metrics summed per node;
* any other key with a numeric value (int or float, not bool; finite) is kept as a user metric by its
  key, summed per node the same way.

A launch_metadata function that raises, returns something that is not a dict, or returns values
that are not numbers never stops the kernel: the problem is reported once per kernel name and kind
of problem (a ``RuntimeWarning`` naming the kernel), the numeric values that were fine are kept, and
a launch whose function raised is recorded with no metadata.

Filters, read when the first hook="triton" session starts: ``FLAGTREE_PROFILER_HOOK_INCLUDE`` and
``FLAGTREE_PROFILER_HOOK_EXCLUDE``, regular expressions searched (``re.search``) in each kernel's name:
only matching kernels (include) and never matching ones (exclude, which wins) have their launch
metadata evaluated. Kernels left out are still profiled, under their own name with no metadata.

Kernels that ``fn`` launches itself go under the state ``__launch_metadata`` (METADATA_STATE),
beside the kernel's node; the viewer hides them unless asked.

How the hook reaches Triton: on GPU backends through Triton's launch enter/exit hooks
(hooks/triton_chain.py says where each Triton version keeps them and how ours sit next to others);
the enter hook's lazy metadata ``get()`` evaluates ``fn``, the result goes to the native core with
``set_launch_metadata`` and is consumed by the next recorded launch on the same thread; the exit hook
clears what was not. The interpreter backend (TRITON_INTERPRET=1) calls no launch hooks, so its
``before_launch`` evaluates ``fn`` itself, with the arguments Triton passes on a GPU.

Sessions share one installation (reference counted): the hooks go away with the last session.
"""
import collections
import collections.abc
import math
import numbers
import re
import threading

import inspect

from .. import _env
from .launch_site import warn_at_launch_site
from .triton_chain import _attach, _launch_hook_owner  # noqa: F401 (instrumentation imports them from here)
from ..native_core import native

INCLUDE_ENV = "FLAGTREE_PROFILER_HOOK_INCLUDE"
EXCLUDE_ENV = "FLAGTREE_PROFILER_HOOK_EXCLUDE"

#: Keys Triton itself puts in the launch-metadata dict on a GPU; never metrics.
_TRITON_KEYS = frozenset(("name", "function", "stream"))

#: What the interpreter hands a launch_metadata function as `metadata` (Triton passes the
#: compiled kernel's metadata on a GPU, a named tuple with these fields among others).
InterpreterKernelMetadata = collections.namedtuple("InterpreterKernelMetadata",
                                                   ("name", "num_warps", "num_stages", "num_ctas"))

_lock = threading.Lock()
_installed = {}  # key -> [reference count, undo function]

# Per-installation state, reset when the first session installs the hook.
_include = None  # compiled pattern or None
_exclude = None
_decisions = {}  # kernel name -> bool: evaluate its launch metadata?
_warned = set()  # (kernel name, problem kind)
_bindings = {}  # id(python function) -> (function, argument names, defaults)
# True while metadata set by this hook may still be waiting on some thread; lets the common
# path skip the native clear call. The native pending slot is per thread and replaced by every
# set, so a stale value only ever comes from a launch that failed after its enter hook.
_pending = False
_set_metadata = None
_clear_metadata = None
_metadata_state = None  # _metadata_state(True) enters the METADATA_STATE state, (False) leaves it

#: The state around a launch_metadata function's own launches (Proton: __proton_launch_metadata).
METADATA_STATE = "__launch_metadata"


# --- the per-launch path -------------------------------------------------------------------

def _wanted(kernel):
    """Whether the filters let `kernel` have its metadata evaluated (cached per name)."""
    decision = _decisions.get(kernel)
    if decision is None:
        name = kernel if isinstance(kernel, str) else str(kernel)
        decision = ((_include is None or _include.search(name) is not None)
                    and (_exclude is None or _exclude.search(name) is None))
        _decisions[kernel] = decision
    return decision


def _warn_once(kernel, kind, message):
    key = (kernel, kind)
    if key in _warned:
        return
    _warned.add(key)
    warn_at_launch_site(f"flagtree.profiler: kernel {kernel!r}: {message}")


def _clear_pending():
    global _pending
    if _pending:
        _pending = False
        _clear_metadata()


def _publish(kernel, values, base_name):
    """Sends the launch's name override and numeric metrics to the native core.

    `base_name` is the kernel's own name: a "name" equal to it is no override. None means the
    kernel's own name is unknown (another hook evaluated the metadata first), so any name is sent.
    """
    global _pending
    override = None
    metrics = []
    bad = None
    for key, value in values.items():
        if key in _TRITON_KEYS:
            if key == "name" and value != base_name and value is not None:
                if isinstance(value, str) and value:
                    override = value
                else:
                    bad = (bad or []) + [key]
            continue
        kind = type(value)
        if (kind is float or kind is int) and type(key) is str:
            if kind is float and not math.isfinite(value):
                bad = (bad or []) + [key]
                continue
            metrics.append((key, value))
            continue
        number = _as_number(value)
        if number is None or type(key) is not str:
            bad = (bad or []) + [key]
        else:
            metrics.append((key, number))
    if bad:
        _warn_once(kernel, "values", f"launch_metadata returned values that are not finite numbers for "
                                     f"{', '.join(map(repr, bad))}; they are dropped (the numeric ones are kept)")
    if override is None and not metrics:
        _clear_pending()
        return
    try:
        _set_metadata(override, metrics)
    except (TypeError, OverflowError):  # an int too large for a double
        kept = [(k, v) for k, v in metrics if _fits_double(v)]
        dropped = [k for k, v in metrics if not _fits_double(v)]
        _warn_once(kernel, "range", f"launch_metadata values out of range for {', '.join(map(repr, dropped))}; "
                                    f"they are dropped")
        _set_metadata(override, kept)
    _pending = True


def _fits_double(value):
    try:
        return math.isfinite(float(value))
    except (OverflowError, TypeError, ValueError):
        return False


def _as_number(value):
    """A finite float for int/float-like values (numpy scalars included), else None. Not bool."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _gpu_enter(metadata):
    """Triton's launch_enter_hook: evaluates the kernel's launch metadata, never raises."""
    try:
        try:
            extras = metadata.extras
            data = metadata.data
        except AttributeError:  # not the lazy dict this module knows: evaluate it generically
            extras = data = None
        if data is not None and not extras:
            # Nothing to evaluate: no launch_metadata function, or another hook evaluated it.
            if data.keys() <= _TRITON_KEYS:
                if _pending:
                    _clear_pending()
                return
            kernel = data.get("name")
            if not _wanted(kernel):
                _clear_pending()
                return
            _publish(kernel, data, None)
            return
        kernel = data.get("name") if data is not None else None
        if kernel is not None and not _wanted(kernel):
            _clear_pending()
            return
        if data is not None or not isinstance(metadata, collections.abc.Mapping):
            values = _evaluate(kernel, metadata.get)
        else:
            values = _evaluate(kernel, lambda: metadata)
        if values is None:
            return
        if kernel is None:
            kernel = values.get("name")
            if not _wanted(kernel):
                _clear_pending()
                return
        _publish(kernel, values, kernel if data is not None else None)
    except Exception as error:  # a profiler bug must not fail the user's launch
        _clear_pending()
        _warn_once(None, "internal", f"the launch-metadata hook failed ({type(error).__name__}: {error})")


def _gpu_exit(metadata):
    """Triton's launch_exit_hook: the launch has happened; metadata it did not take is dropped."""
    if _pending:
        try:
            _clear_pending()
        except Exception:
            pass


def _binding(interpreted):
    fn = interpreted.fn
    entry = _bindings.get(id(fn))
    if entry is None or entry[0] is not fn:
        parameters = inspect.signature(fn).parameters
        names = list(getattr(interpreted, "arg_names", None) or parameters)
        defaults = {p.name: p.default for p in parameters.values() if p.default is not inspect.Parameter.empty}
        entry = _bindings[id(fn)] = (fn, names, defaults)
    return entry


def _evaluate(kernel, compute):
    """The launch metadata dict that compute() gives, or None (pending metadata cleared, the
    problem reported once per kernel) when it raises or gives something else. Kernels that
    compute() launches itself go under the state METADATA_STATE, beside the kernel's node."""
    try:
        _metadata_state(True)
        try:
            values = compute()
        finally:
            _metadata_state(False)
    except Exception as error:
        _clear_pending()
        _warn_once(kernel, "raised", f"launch_metadata raised {type(error).__name__}: {error}; "
                                     f"the launch is recorded without metadata")
        return None
    if not isinstance(values, collections.abc.Mapping):
        _clear_pending()
        _warn_once(kernel, "type", f"launch metadata is a {type(values).__name__}, not a dict; ignored")
        return None
    return values


def _interpreter_before_launch(interpreted, args, grid, kwargs):
    """The interpreter backend's before_launch: evaluates launch_metadata as Triton does on a GPU."""
    try:
        options = getattr(interpreted, "kwargs", None)
        function = options.get("launch_metadata") if options else None
        if function is None:
            if _pending:
                _clear_pending()
            return
        kernel = interpreted.fn.__name__
        if not _wanted(kernel):
            _clear_pending()
            return
        _, names, defaults = _binding(interpreted)
        bound = dict(zip(names, args))
        for name in names[len(args):]:
            if name in kwargs:
                bound[name] = kwargs[name]
            elif name in defaults:
                bound[name] = defaults[name]
        meta = InterpreterKernelMetadata(kernel, kwargs.get("num_warps") or 4,
                                         kwargs.get("num_stages") or 3, kwargs.get("num_ctas") or 1)
        values = _evaluate(kernel, lambda: function(tuple(grid(bound) if callable(grid) else grid), meta, bound))
        if values is None:
            return
        _publish(kernel, values, kernel)
    except Exception as error:  # a profiler bug must not fail the user's launch
        _clear_pending()
        _warn_once(None, "internal", f"the launch-metadata hook failed ({type(error).__name__}: {error})")


# --- installation --------------------------------------------------------------------------

def _compile_filter(variable):
    raw = _env.raw(variable)
    if not raw.strip():
        return None
    try:
        return re.compile(raw)
    except re.error as error:
        raise ValueError(f"{variable} is not a valid regular expression ({error}): {raw!r}") from None


def _reset_state():
    global _include, _exclude, _pending, _set_metadata, _clear_metadata, _metadata_state
    include = _compile_filter(INCLUDE_ENV)
    exclude = _compile_filter(EXCLUDE_ENV)
    _include, _exclude = include, exclude
    _set_metadata = native.context.set_launch_metadata
    _clear_metadata = native.context.clear_launch_metadata
    state_id = native.core.intern(METADATA_STATE)

    def metadata_state(enter):
        native.context.state_push(state_id) if enter else native.context.state_pop()

    _metadata_state = metadata_state
    _decisions.clear()
    _warned.clear()
    _bindings.clear()
    _pending = False


def _install_gpu():
    owner = _launch_hook_owner()
    undo_enter = _attach(owner, "launch_enter_hook", _gpu_enter)
    try:
        undo_exit = _attach(owner, "launch_exit_hook", _gpu_exit, order="last")  # after recorders
    except BaseException:
        undo_enter()
        raise

    def undo():
        try:
            undo_exit()
        finally:
            undo_enter()
            _clear_pending()

    return undo


def _install_interpreter(backend):
    previous = getattr(backend, "before_launch", None)

    if previous is None:
        hook = _interpreter_before_launch
    else:
        def hook(interpreted, args, grid, kwargs):
            previous(interpreted, args, grid, kwargs)
            _interpreter_before_launch(interpreted, args, grid, kwargs)

    backend.before_launch = hook

    def undo():
        if backend.before_launch is hook:
            backend.before_launch = previous
        _clear_pending()

    return undo


class HookHandle:
    """What install() returns; remove() undoes this installation (once)."""

    def __init__(self, key):
        self._key = key
        self._removed = False

    def remove(self):
        with _lock:
            if self._removed:
                return
            self._removed = True
            entry = _installed.get(self._key)
            if entry is None:
                return
            entry[0] -= 1
            if entry[0] == 0:
                del _installed[self._key]
                entry[1]()


def install(backend):
    """Installs the launch-metadata hook for `backend`; returns a handle with remove().

    Reference counted: sessions sharing a backend share one installation.
    """
    interpreter = getattr(backend, "name", None) == "interpreter"
    key = ("interpreter", id(backend)) if interpreter else ("triton",)
    with _lock:
        entry = _installed.get(key)
        if entry is None:
            if not _installed:
                _reset_state()
            undo = _install_interpreter(backend) if interpreter else _install_gpu()
            entry = _installed[key] = [0, undo]
        entry[0] += 1
        return HookHandle(key)


def installed():
    """How many sessions hold each installation (for tests and diagnostics)."""
    with _lock:
        return {key[0]: entry[0] for key, entry in _installed.items()}
