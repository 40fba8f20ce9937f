"""How Triton's NVIDIA launcher (``CudaLauncher``) calls its compiled ``launch``: the argument
layout a native stand-in for its ``__call__`` must reproduce (device_timer's slot launcher).

Told from what ``CudaLauncher.__call__``'s code reads (its names, its nested function's too) and
its positional arity, so a Triton whose call differs in any of them is not recognised:

* "flat" (Triton 3.5, 3.6): ``__call__(gridX, gridY, gridZ, stream, function, *args)`` calls
  ``launch(gridX, gridY, gridZ, stream, function, coop, pdl, global_scratch, profile_scratch, *args)``;
* "packed" (3.7 to 3.9): ``__call__(gridX, gridY, gridZ, stream, function, kernel_metadata,
  launch_metadata, enter_hook, exit_hook, *args)`` calls ``launch(gridX, gridY, gridZ, stream,
  function, coop, pdl, kernel_metadata, launch_metadata, enter_hook, exit_hook, global_scratch,
  profile_scratch, arg_annotations, kernel_signature, args)``. 3.8 and 3.9 add GSan (only for
  launchers with ``gsan_enabled``, not recognised then) and a default profile scratch (only where
  no profile allocator is set, never the case where a slot launcher is made).
"""
import inspect

from .kernels import code_names

_FLAT = frozenset({"_allocation", "_allocator", "_profile_allocator", "get", "global_scratch_align",
                   "global_scratch_size", "launch", "launch_cooperative_grid", "launch_pdl", "num_ctas",
                   "profile_scratch_align", "profile_scratch_size"})
_PACKED = _FLAT | {"arg_annotations", "kernel_signature"}
# What 3.8 and 3.9 read besides, in branches a recognised launcher never takes.
_PACKED_BRANCHES = frozenset({
    "GSAN_PER_DEVICE_STATE_STRIDE", "RuntimeError", "_stream_sync", "active", "allocate_default_profile_scratch",
    "driver", "experimental", "get_current_device", "get_device_rank", "get_global_state_pointer",
    "get_launch_state", "gsan", "gsan_enabled", "has_profile_allocator", "is_stream_capturing", "runtime",
    "synchronize_launch_stream", "triton", "triton.experimental.gsan._allocator",
    "triton.experimental.gsan._stream_sync", "utils"})


def call_layout(launcher):
    """"flat", "packed" or None: how `launcher`'s call passes its arguments to its ``launch``,
    where this module knows it."""
    code = getattr(getattr(type(launcher), "__call__", None), "__code__", None)
    if code is None or not code.co_flags & inspect.CO_VARARGS or not hasattr(launcher, "launch"):
        return None
    names = code_names(code)
    if code.co_argcount == 6 and names == _FLAT:
        return "flat"
    if code.co_argcount == 10 and _PACKED <= names <= _PACKED | _PACKED_BRANCHES:
        if "gsan_enabled" in names and getattr(launcher, "gsan_enabled", True):
            return None
        return "packed"
    return None
