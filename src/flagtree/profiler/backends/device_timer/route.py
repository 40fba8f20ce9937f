"""Whether the device_timer route can run for a Triton target, and with which stamper.

Written for any target: what it needs is Triton's hooks (compiler_hook.check_triton), a compiler
backend for the target that calls the stages inspection hook from its add_stages, a launcher
that passes the kernel a profile scratch pointer from Triton's profile allocator, and a stamper
for the code its stages print (stampers.py). Each is checked on the target's own classes, not
on its name: the answer holds for a build that gains or lacks the pieces, and says which piece
is missing. The ring device (the native ring over the CUDA driver API) is started by the
backend; whether it starts is the last check, made at acquire().
"""
import threading
from dataclasses import dataclass, field

from ..base import BackendUnavailable
from . import compiler_hook, stampers
from ...triton_glue import kernels as triton_kernels, stages as triton_stages, target as triton_target
from ...triton_glue.target import interpreter_active

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


def compiler_backend(target):
    """The Triton backend (compiler and driver classes) that compiles for `target`."""
    found = triton_target.compiler_backend_for(target)
    if found is None:
        raise BackendUnavailable(f"no Triton compiler backend supports target {target!r} "
                                 f"(installed: {', '.join(sorted(triton_target.compiler_backends())) or 'none'})")
    return found


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
        target = target if target is not None else triton_target.current_target()
        facts["target"] = f"{getattr(target, 'backend', '?')}:{getattr(target, 'arch', '?')}"
        name, backend = compiler_backend(target)
        key = (repr(target), backend.compiler, backend.driver)
        with _lock:
            known = _answers.get(key)
        if known is not None:
            return known
        # After the look-up: the target's kind looks for CoreX's driver on the disk.
        facts["target_kind"] = stampers.target_kind(target)
        facts["compiler_backend"] = name
        stages, hooked = triton_stages.registered_stages(backend.compiler, target)
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
    facts["launcher_profile_scratch"] = triton_kernels.launcher_passes_profile_scratch(backend.driver)
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
