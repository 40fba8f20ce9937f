"""Whether the device_timer route can run for a Triton target, and with which stamper.

Written for any target: what it needs is Triton's hooks (compiler_hook.check_triton), a compiler
backend for the target that calls the stages inspection hook from its add_stages, a launcher
that passes the kernel a profile scratch pointer from Triton's profile allocator, and a stamper
for the code its stages print (stampers.py). Each is checked on the target's own classes, not
on its name: the answer holds for a build that gains or lacks the pieces, and says which piece
is missing. The ring device (the native ring over the CUDA driver API) is started by the
backend; whether it starts is the last check, made at acquire().
"""
import sys
import threading
import types
from dataclasses import dataclass, field

from ..base import BackendUnavailable
from ..interpreter import interpreter_active
from . import compiler_hook, stampers

_lock = threading.Lock()
_answers = {}  # (target, compiler class, driver class) -> RouteSupport


@dataclass(frozen=True)
class RouteSupport:
    stamper: object = None  # the stamper, when supported
    reason: str = None  # why not, when not supported
    facts: dict = field(default_factory=dict)  # what was found (for the metadata)

    @property
    def supported(self):
        return self.stamper is not None


def current_target():
    from triton.runtime import driver  # deferred: triton is heavy and optional

    return driver.active.get_current_target()


def compiler_backend(target):
    """The Triton backend (compiler and driver classes) that compiles for `target`."""
    from triton.backends import backends  # deferred: triton is heavy and optional

    for name, backend in backends.items():
        if backend.compiler.supports_target(target):
            return name, backend
    raise BackendUnavailable(f"no Triton compiler backend supports target {target!r} "
                             f"(installed: {', '.join(sorted(backends)) or 'none'})")


def registered_stages(compiler_cls, target):
    """(stage names in order, whether add_stages called the stages inspection hook), from the
    compiler's own add_stages with default options: nothing is compiled."""
    import triton  # deferred: triton is heavy and optional
    from triton.backends.compiler import Language  # deferred: triton is heavy and optional

    runtime = triton.knobs.runtime
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


def _code_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def launcher_passes_profile_scratch(driver_cls):
    """Whether the code of the driver's module (its launcher) asks Triton's profile allocator
    for the kernel's profile scratch pointer (``_allocation._profile_allocator``)."""
    module = sys.modules.get(driver_cls.__module__)
    for value in vars(module).values() if module else ():
        functions = []
        if isinstance(value, type) and value.__module__ == module.__name__:
            functions = [f for f in vars(value).values() if isinstance(f, types.FunctionType)]
        elif isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            functions = [value]
        if any("_profile_allocator" in _code_names(f.__code__) for f in functions):
            return True
    return False


def route_support(target=None):
    """RouteSupport for `target` (default: Triton's current target). The answer for a target and
    its compiler and driver classes is kept: they do not change in a process, and inspecting them
    (the compiler's add_stages, the launcher's code) would otherwise run at every session start."""
    facts = {}
    if interpreter_active():
        return RouteSupport(reason="Triton's interpreter (TRITON_INTERPRET=1) runs kernels on the host: "
                                   "no compiled kernel to stamp", facts=facts)
    try:
        compiler_hook.check_triton()
        target = target if target is not None else current_target()
        facts["target"] = f"{getattr(target, 'backend', '?')}:{getattr(target, 'arch', '?')}"
        facts["target_kind"] = stampers.target_kind(target)
        name, backend = compiler_backend(target)
        facts["compiler_backend"] = name
        key = (repr(target), backend.compiler, backend.driver)
        with _lock:
            known = _answers.get(key)
        if known is not None:
            return known
        stages, hooked = registered_stages(backend.compiler, target)
    except BackendUnavailable as error:
        return RouteSupport(reason=str(error), facts=facts)
    except Exception as error:  # a vendor build's compiler or driver that cannot answer here
        return RouteSupport(reason=f"cannot inspect Triton's target: {type(error).__name__}: {error}", facts=facts)
    answer = _judge(name, backend, target, stages, hooked, facts)
    with _lock:
        _answers[key] = answer
    return answer


def _judge(name, backend, target, stages, hooked, facts):
    """The RouteSupport of an inspected target: the first missing piece, or its stamper."""
    facts["stages"] = stages
    facts["launcher_profile_scratch"] = launcher_passes_profile_scratch(backend.driver)
    if not hooked:
        return RouteSupport(reason=f"Triton backend {name!r}: its compiler's add_stages does not call "
                                   f"knobs.runtime.add_stages_inspection_hook (no stage can be wrapped)", facts=facts)
    if not facts["launcher_profile_scratch"]:
        return RouteSupport(reason=f"Triton backend {name!r}: its launcher passes no profile scratch pointer "
                                   f"(its driver never asks triton.runtime._allocation's profile allocator)",
                            facts=facts)
    stamper, why_not = stampers.stamper_for(target, stages)
    if stamper is None:
        return RouteSupport(reason=why_not, facts=facts)
    facts["stamper"] = stamper.name
    facts["stamped_stage"] = stamper.stage
    return RouteSupport(stamper=stamper, facts=facts)
