"""A stamped kernel's launcher call made native: Triton's own (``CudaLauncher.__call__``) is
Python, and for a kernel with a profile scratch it asks the profile allocator through a closure
made at every launch; the slot launcher (csrc/backends/device_timer/slot_launcher.cpp) claims the
ring slot directly and calls the launcher's ``launch`` with the arguments Triton's call would pass
(triton_glue/launcher_layout.py). Launchers of another layout, kernels with a global scratch or a
profile scratch that is not the ring's keep Triton's call."""
from ...common import timer_tags
from ...native_core import native
from ...triton_glue import kernels as triton_kernels
from ...triton_glue.launcher_layout import call_layout


def slot_launcher(launcher):
    """`launcher` (a stamped kernel's Triton launcher) as a native slot launcher where its call is
    known, else `launcher` itself."""
    layout = call_layout(launcher)
    if layout is None or getattr(launcher, "global_scratch_size", None) != 0 or \
            getattr(launcher, "profile_scratch_size", 0) <= 0 or \
            getattr(launcher, "profile_scratch_align", None) != timer_tags.current():
        return launcher
    return native.device_timer.SlotLauncher(
        launcher.launch, launcher, triton_kernels.profile_allocator_getter(), native.device_timer.device_timer_allocate,
        launcher.launch_cooperative_grid, launcher.launch_pdl, layout == "packed",
        getattr(launcher, "arg_annotations", None), getattr(launcher, "kernel_signature", None))
