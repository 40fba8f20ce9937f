"""FlagTree Profiler: a low-overhead profiler for Triton kernels.

    import flagtree.profiler as profiler
    session_id = profiler.start(name="profile_name", context="shadow")
    with profiler.scope("attn"):
        kernel[grid](...)
    profiler.finalize()

See the README for backends, outputs and the viewer.
"""
from .backends import KNOWN_BACKENDS, available_backends, implemented_backends
from .backends.nvidia.counters import list_metrics
from .backends.nvidia.cupti_attach import release
from .profile import profile
from .scope import cpu_timed_scope, enter_scope, enter_state, exit_scope, exit_state, scope, state
from .session import activate, deactivate, finalize, flush_part, start

__all__ = [
    "start", "activate", "deactivate", "finalize", "flush_part", "profile",
    "scope", "cpu_timed_scope", "enter_scope", "exit_scope",
    "state", "enter_state", "exit_state",
    "KNOWN_BACKENDS", "implemented_backends", "available_backends",
    "list_metrics", "release",
]
