"""FlagTree Profiler: a low-overhead profiler for Triton kernels.

    import flagtree.profiler as profiler
    session_id = profiler.start(name="profile_name", context="shadow")
    with profiler.scope("attn"):
        kernel[grid](...)
    profiler.finalize()

    profile = profiler.read("profile_name.hatchet")   # analysis: tables, top, diff

See the README for backends, outputs and the viewer, docs/reference/analysis.md for read().
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
    "list_metrics", "release", "read",
]


def __getattr__(name):
    """``read`` (the analysis API) is imported on first use: it brings the viewer's reader
    and metric code, which a profiled program never needs."""
    if name == "read":
        from .analysis import read  # deferred: the viewer's reader, never needed while profiling

        return read
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
