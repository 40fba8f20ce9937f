"""Kernel-side scopes for backend="instrumentation": ``import flagtree.profiler.language as pl``.

Inside a ``@triton.jit`` or Gluon kernel::

    with pl.scope("load"):
        x = tl.load(ptr + offsets)
    pl.enter_scope("store")
    tl.store(out + offsets, x)
    pl.exit_scope("store")

Each boundary becomes a clock read in the compiled kernel, but only while the kernel is compiled
inside a ``start(backend="instrumentation")`` session. Outside one (and under TRITON_INTERPRET=1)
these calls emit nothing, so the kernel is exactly the plain kernel.

Gluon kernels are instrumented by default. Triton-language kernels are opted in with the session
mode option ``triton=on`` (or FLAGTREE_PROFILER_INSTRUMENT_TRITON=1): Triton's compiler pipelines,
reorders and duplicates code after these marks are placed, so their cycles are approximate.
"""
import warnings

from .triton_glue.compiler_points import is_compiler_builder, is_gluon_semantic, libtriton

TRITON_BUILTIN = "__triton_builtin__"

# Set by the instrumentation backend while kernels compiled now must carry scope records.
_config = {"enabled": False, "triton_kernels": False}
_warned_kernels = set()


def _set_enabled(enabled, triton_kernels):
    """Called by the instrumentation backend's compiler hook; process-wide like Triton's knobs."""
    _config["enabled"] = bool(enabled)
    _config["triton_kernels"] = bool(triton_kernels)


def instrumentation_enabled():
    return _config["enabled"]


def _semantic_wants_records(semantic):
    if is_gluon_semantic(semantic):
        return True
    if _config["triton_kernels"]:
        return True
    # A Triton kernel with scopes while Triton kernels are not opted in: say so once per process.
    if not _warned_kernels:
        _warned_kernels.add(True)
        warnings.warn("flagtree.profiler.language: scopes in Triton-language kernels are ignored; "
                      "Triton kernels are instrumented only with start(backend='instrumentation', "
                      "mode='triton=on') or FLAGTREE_PROFILER_INSTRUMENT_TRITON=1 (Gluon kernels always are)",
                      RuntimeWarning, stacklevel=4)
    return False


def _unwrap(value):
    return getattr(value, "value", value)


def _record(is_start, name, semantic):
    """Emits one proton.record op through the semantic's builder, or nothing."""
    if semantic is None or not _config["enabled"]:
        return None  # interpreter mode, or a compilation outside an instrumentation session
    builder = getattr(semantic, "builder", None)
    if not is_compiler_builder(builder) or not _semantic_wants_records(semantic):
        return None  # the interpreter's builder records nothing
    name = _unwrap(name)
    if not isinstance(name, str) or not name:
        raise TypeError(f"flagtree.profiler.language: a scope name must be a non-empty string constant, "
                        f"got {name!r}")
    libtriton("proton").create_proton_record(builder, bool(_unwrap(is_start)), name)
    return None


def _kernel_builtin(fn):
    """Marks fn as a builtin for Triton's code generator (which then passes _semantic=...), while
    staying callable without _semantic, as happens under the interpreter."""
    setattr(fn, TRITON_BUILTIN, True)
    return fn


@_kernel_builtin
def enter_scope(name, _semantic=None, _generator=None):
    """Opens kernel-side scope `name` (a string constant)."""
    return _record(True, name, _semantic)


@_kernel_builtin
def exit_scope(name, _semantic=None, _generator=None):
    """Closes kernel-side scope `name`; must match the innermost open enter_scope."""
    return _record(False, name, _semantic)


class scope:
    """``with pl.scope("name"):`` inside a kernel: enter_scope on entry, exit_scope on exit."""

    def __init__(self, name, _semantic=None, _generator=None):
        self.name = name
        self.semantic = _semantic

    def __enter__(self):
        _record(True, self.name, self.semantic)

    def __exit__(self, exc_type, exc_value, traceback):
        _record(False, self.name, self.semantic)
        return False


__all__ = ["scope", "enter_scope", "exit_scope", "instrumentation_enabled"]
