"""The per-launch path of hook="triton" (hooks/triton.py installs it): evaluating a kernel's
launch_metadata function in Triton's launch-enter hook (or the interpreter backend's
before_launch), checking what it returns and handing the name override and numeric metrics to the
native core, which the next recorded launch on the same thread takes. Never raises into the
user's launch: problems are reported once per kernel name and kind."""
import collections
import collections.abc
import inspect
import math
import numbers
import re

from .. import _env
from ..common.safe_text import is_utf8
from .launch_site import warn_at_launch_site
from ..native_core import native
from ..triton_glue.interpreter import jit_options

INCLUDE_ENV = "FLAGTREE_PROFILER_HOOK_INCLUDE"
EXCLUDE_ENV = "FLAGTREE_PROFILER_HOOK_EXCLUDE"

#: Keys Triton itself puts in the launch-metadata dict on a GPU; never metrics.
_TRITON_KEYS = frozenset(("name", "function", "stream"))
#: Metrics every kernel node holds already: one returned by launch_metadata would repeat the key in
#: the node's JSON object (not strict JSON) and stand for the launch count or time in the viewer.
_WRITTEN_KEYS = frozenset(("count", "time (ns)", "device_id", "device_type"))

#: What the interpreter hands a launch_metadata function as `metadata` (Triton passes the
#: compiled kernel's metadata on a GPU, a named tuple with these fields among others).
InterpreterKernelMetadata = collections.namedtuple("InterpreterKernelMetadata",
                                                   ("name", "num_warps", "num_stages", "num_ctas"))


# Per-installation state, reset (reset_state) when the first session installs the hook.
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


def clear_pending():
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
                if isinstance(value, str) and value and is_utf8(value):  # a lone surrogate is no name
                    override = value
                else:
                    bad = (bad or []) + [key]
            continue
        if key in _WRITTEN_KEYS or (type(key) is str and not is_utf8(key)):
            _warn_once(kernel, "written", f"launch_metadata returned {key!r}, a metric name the profiler writes "
                                          f"itself or one that is not UTF-8 text; it is dropped")
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
        clear_pending()
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


def gpu_enter(metadata):
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
                    clear_pending()
                return
            kernel = data.get("name")
            if not _wanted(kernel):
                clear_pending()
                return
            _publish(kernel, data, None)
            return
        kernel = data.get("name") if data is not None else None
        if kernel is not None and not _wanted(kernel):
            clear_pending()
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
                clear_pending()
                return
        _publish(kernel, values, kernel if data is not None else None)
    except Exception as error:  # a profiler bug must not fail the user's launch
        clear_pending()
        _warn_once(None, "internal", f"the launch-metadata hook failed ({type(error).__name__}: {error})")


def gpu_exit(metadata):
    """Triton's launch_exit_hook: the launch has happened; metadata it did not take is dropped."""
    if _pending:
        try:
            clear_pending()
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
        clear_pending()
        _warn_once(kernel, "raised", f"launch_metadata raised {type(error).__name__}: {error}; "
                                     f"the launch is recorded without metadata")
        return None
    if not isinstance(values, collections.abc.Mapping):
        clear_pending()
        _warn_once(kernel, "type", f"launch metadata is a {type(values).__name__}, not a dict; ignored")
        return None
    return values


def interpreter_before_launch(interpreted, args, grid, kwargs):
    """The interpreter backend's before_launch: evaluates launch_metadata as Triton does on a GPU."""
    try:
        options = jit_options(interpreted)
        function = options.get("launch_metadata") if options else None
        if function is None:
            if _pending:
                clear_pending()
            return
        kernel = interpreted.fn.__name__
        if not _wanted(kernel):
            clear_pending()
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
        clear_pending()
        _warn_once(None, "internal", f"the launch-metadata hook failed ({type(error).__name__}: {error})")


def _compile_filter(variable):
    raw = _env.raw(variable)
    if not raw.strip():
        return None
    try:
        return re.compile(raw)
    except re.error as error:
        raise ValueError(f"{variable} is not a valid regular expression ({error}): {raw!r}") from None


def reset_state():
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

