"""FlagTree Profiler: a low-overhead profiler for Triton kernels.

    import flagtree.profiler as profiler
    session_id = profiler.start(name="profile_name", context="shadow")
    with profiler.scope("attn"):
        kernel[grid](...)
    profiler.finalize()

    profile = profiler.read("profile_name.hatchet")   # analysis: tables, top, diff

See the README for backends, outputs and the viewer, docs/reference/analysis.md for read().
"""
from . import context  # Proton's `proton.context.depth(session)`: an attribute of the package, as there
from .backends import KNOWN_BACKENDS, available_backends
from .device_timer_arm import arm_device_timer, arm_from_environment as _arm_from_environment, disarm_device_timer
from .inductor import codegen_hook as _inductor_codegen
from .paths import DEFAULT_PROFILE_NAME
from .profile import profile
from .scope import cpu_timed_scope, enter_scope, enter_state, exit_scope, exit_state, scope, state
from .schedule_steps import schedule
from .session import activate, deactivate, finalize, flush_part, start, step
from .trigger import arm, disarm

# The model's source lines of each kernel inductor writes from now on (inductor/codegen_hook.py):
# seen only while inductor generates code, so looked for from the package's import on.
_inductor_codegen.install()
# FLAGTREE_PROFILER_DEVICE_TIMER_ARM: the device_timer route installed before the program captures
# its first CUDA graphs (a warning, never an error, where it cannot run).
_arm_from_environment()

__all__ = [
    "start", "activate", "deactivate", "finalize", "flush_part", "profile", "schedule", "step", "arm", "disarm",
    "scope", "cpu_timed_scope", "enter_scope", "exit_scope",
    "state", "enter_state", "exit_state",
    "KNOWN_BACKENDS", "available_backends", "DEFAULT_PROFILE_NAME",
    "arm_device_timer", "disarm_device_timer", "list_metrics", "release", "read",
]


def list_metrics(chip=None, submetrics=False):
    """The hardware metrics of an NVIDIA chip, for start(backend="nvidia", mode="metrics=...")
    (backends/nvidia/counters.py says what each entry holds)."""
    from .backends.nvidia.counters import list_metrics as nvidia_metrics  # deferred: NVIDIA's modules load when used

    return nvidia_metrics(chip=chip, submetrics=submetrics)


def release():
    """Lets go of CUPTI now, so that another CUPTI client can attach in this process: True if
    it released, False if there was nothing to release or a session still runs."""
    from .backends.nvidia.cupti_attach import release as release_cupti  # deferred: NVIDIA's modules load when used

    return release_cupti()


def __getattr__(name):
    """``read`` (the analysis API) is imported on first use: it brings the viewer's reader
    and metric code, which a profiled program never needs."""
    if name == "read":
        from .analysis import read  # deferred: the viewer's reader, never needed while profiling

        return read
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
