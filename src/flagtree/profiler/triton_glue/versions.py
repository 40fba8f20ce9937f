"""Which Triton this is and which of its hooks it has: every version check in one place.

Checks ask for the hook itself where they can (a vendor build may carry a hook earlier or later
than upstream); the version number only bounds what no attribute tells (launch hooks before 3.1).
"""
import re

#: The first Triton whose launch hooks we use (CompiledKernel class attributes on 3.1 to 3.3,
#: triton.knobs.runtime from 3.4). 3.1 is what FlagTree ships its iluvatar and mthreads backends
#: on: its CompiledKernel keeps the class-level hooks, and its launchers call both.
MINIMUM_LAUNCH_HOOKS = (3, 1)


def import_triton():
    """The triton module; ImportError (Triton's own message) when it cannot be imported."""
    import triton  # deferred: triton is heavy and optional

    return triton


def version_tuple(text):
    """(major, minor) from a version string such as "3.6.0+git123", or None."""
    parts = re.findall(r"\d+", text or "")[:2]
    return tuple(int(p) for p in parts) if len(parts) == 2 else None


def triton_version():
    """Triton's version string ("unknown" when the build carries none); ImportError without Triton."""
    return getattr(import_triton(), "__version__", "unknown")


def _knobs_group(name):
    """triton.knobs.<name> (3.4 and later), or None (3.2/3.3 have no knobs)."""
    return getattr(getattr(import_triton(), "knobs", None), name, None)


def missing_compiler_hooks():
    """What this Triton lacks of the hooks a compile-time route needs (stamps, kernel-side
    scopes): the stages inspection hook, the kernel-load hook, compilation.instrumentation_mode
    and the profile allocator. Empty on 3.6 to 3.9; on 3.5 the stages inspection hook and
    instrumentation_mode; all of it on 3.1 to 3.4 (checked on 3.1.0, 3.3.1, 3.5.1 and 3.6.0)."""
    runtime = _knobs_group("runtime")
    missing = [name for name in ("add_stages_inspection_hook", "kernel_load_end_hook")
               if runtime is None or not hasattr(runtime, name)]
    compilation = _knobs_group("compilation")
    if compilation is None or not hasattr(compilation, "instrumentation_mode"):
        missing.append("compilation.instrumentation_mode")
    try:
        from triton.runtime import _allocation  # deferred: triton is heavy and optional
    except ImportError:
        _allocation = None
    if _allocation is None or not hasattr(_allocation, "set_profile_allocator"):
        missing.append("runtime._allocation.set_profile_allocator")
    return missing


def has_kernel_load_hook():
    """Whether triton.knobs.runtime.kernel_load_end_hook exists (Triton 3.5 and later)."""
    return hasattr(_knobs_group("runtime"), "kernel_load_end_hook")
