"""What a test needs of the installed Triton, and skips that say which Triton has it, for running
the CPU suite with an older Triton first on PYTHONPATH (docs/development.md, "Other Tritons").

Asked of the glue (flagtree.profiler.triton_glue), which checks for the hooks themselves.
"""
import pytest

from flagtree.profiler.triton_glue import interpreter, launch_hooks, versions


def compiler_hooks_reason():
    """Why this Triton cannot run the compile-time routes (device_timer stamps, kernel-side scopes),
    or None where it can."""
    missing = versions.missing_compiler_hooks()
    if not missing:
        return None
    return (f"needs Triton 3.6 or later (the compiler hooks of the device_timer and instrumentation routes); "
            f"Triton {versions.triton_version()} lacks {', '.join(missing)}")


def skip_without_compiler_hooks(module_level=False):
    """Skips the test (or, `module_level`, the module being imported) on a Triton without them."""
    reason = compiler_hooks_reason()
    if reason:
        pytest.skip(reason, allow_module_level=module_level)


def interpreter_metadata_reason():
    """Why this Triton's interpreter gives hook="triton" no launch_metadata, or None."""
    if interpreter.keeps_jit_options():
        return None
    return (f"needs Triton 3.3 or later: the interpreter of Triton {versions.triton_version()} drops "
            f"triton.jit's launch_metadata")


def knob_hooks_reason():
    """Why this Triton's launch hooks are not ``triton.knobs.runtime``'s (where Triton 3.4 and later
    keep them, a hook chain from 3.6), or None."""
    if not isinstance(launch_hooks.launch_hook_owner(), type):
        return None
    return (f"needs Triton 3.4 or later (launch hooks in triton.knobs.runtime); Triton "
            f"{versions.triton_version()} keeps them on CompiledKernel")


needs_compiler_hooks = pytest.mark.skipif(compiler_hooks_reason() is not None, reason=str(compiler_hooks_reason()))
needs_interpreter_metadata = pytest.mark.skipif(interpreter_metadata_reason() is not None,
                                                reason=str(interpreter_metadata_reason()))
needs_knob_hooks = pytest.mark.skipif(knob_hooks_reason() is not None, reason=str(knob_hooks_reason()))

