"""Triton's compiler stages: the stages inspection hook (a backend's add_stages hands it the
ordered dict of stage functions, which we may wrap), the stages a compiler backend registers, and
``instrumentation_mode``, the part of every kernel's compile options (hence of the in-memory and
on-disk cache keys) that tells instrumented binaries from plain ones.

All of it is Triton 3.6-3.9's ``triton.knobs`` (versions.missing_compiler_hooks says what an older
build lacks: 3.5.1 has neither the hook nor the mode). Triton 3.9's ``triton._instrumentation``
points are compiler_points.py's.
"""
import threading

from .versions import import_triton

_lock = threading.Lock()  # registered_stages swaps the process-wide hook for a moment


def _runtime_knobs():
    return getattr(getattr(import_triton(), "knobs", None), "runtime", None)


def chain_stages_hook(edit_stages, key_part):
    """Chains onto ``triton.knobs.runtime.add_stages_inspection_hook``: at each compile, after the
    hook installed before (if any), `edit_stages(stages)` may wrap or replace entries of the
    compiler's stage dict. When Triton asks the hook for its cache-key part (a call with no
    arguments) and nothing was installed before, the answer is ("", `key_part`). Returns the undo
    (which leaves a hook installed after ours in place), or None where this Triton has no stages
    inspection hook (before 3.5)."""
    runtime = _runtime_knobs()
    if runtime is None or not hasattr(runtime, "add_stages_inspection_hook"):
        return None
    previous = runtime.add_stages_inspection_hook
    own_answer = ("", key_part)  # made once: Triton asks for it at every launch through JITFunction.run

    def hook(*args, **kwargs):
        if not args and not kwargs:  # later Triton asks for a cache-key part
            return previous() if previous is not None else own_answer
        if previous is not None:
            previous(*args, **kwargs)
        edit_stages(kwargs["stages"] if "stages" in kwargs else args[1])

    runtime.add_stages_inspection_hook = hook

    def undo():
        if runtime.add_stages_inspection_hook is hook:
            runtime.add_stages_inspection_hook = previous

    return undo


def registered_stages(compiler_cls, target):
    """(stage names in order, whether add_stages called the stages inspection hook), from the
    compiler's own add_stages with default options: nothing is compiled. Compilers of Triton
    3.5 and later take (stages, options, language); earlier ones (stages, options)."""
    from triton.backends.compiler import Language  # deferred: triton is heavy and optional

    runtime = _runtime_knobs()
    compiler = compiler_cls(target)
    options = compiler.parse_options({})
    stages, seen = {}, []
    with _lock:
        previous = runtime.add_stages_inspection_hook

        def recorder(*args, **kwargs):
            if not args and not kwargs:
                return previous() if previous is not None else ("", "")
            seen.append(True)
            if previous is not None:  # a compile on another thread meanwhile keeps its hook
                return previous(*args, **kwargs)
            return None

        runtime.add_stages_inspection_hook = recorder
        try:
            try:
                compiler.add_stages(stages, options, Language.TRITON)
            except TypeError:  # a compiler of the Triton before languages (stages, options)
                compiler.add_stages(stages, options)
        finally:
            runtime.add_stages_inspection_hook = previous
    return list(stages), bool(seen)


def instrumentation_mode():
    """``triton.knobs.compilation.instrumentation_mode`` now ("" when nobody set it; 3.5-3.9)."""
    return import_triton().knobs.compilation.instrumentation_mode


def set_instrumentation_mode(mode):
    """Sets ``triton.knobs.compilation.instrumentation_mode`` to `mode` (kernels compiled from now
    on carry it in their options and cache keys; 3.5-3.9); returns the undo, which puts back the
    value found here."""
    compilation = import_triton().knobs.compilation
    previous = compilation.instrumentation_mode
    compilation.instrumentation_mode = mode

    def undo():
        compilation.instrumentation_mode = previous

    return undo


def compiler_knobs():
    """(stages inspection hook, instrumentation_mode) as they are now: what a compiler route sets
    (None and "" when nothing did; None where this Triton has no such knobs)."""
    runtime = _runtime_knobs()
    if runtime is None or not hasattr(runtime, "add_stages_inspection_hook"):
        return None
    return runtime.add_stages_inspection_hook, instrumentation_mode()


def set_compiler_knobs(knobs):
    """Sets both knobs (a compiler_knobs() value). A JITFunction.run on another thread meanwhile
    may read one knob old and one new: its cache key (mode, stages-hook part) is then one that
    neither setting's launches use, so it compiles once more for what it read and runs that;
    the kernels of either setting are never swapped."""
    hook, mode = knobs
    _runtime_knobs().add_stages_inspection_hook = hook
    import_triton().knobs.compilation.instrumentation_mode = mode
