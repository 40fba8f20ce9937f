"""A launch as triton-ascend makes it, for the cann stand-in tests: Triton's launch hooks around
rtKernelLaunch (the stand-in's standin_rt_launch), which MSPTI's callbacks never see."""
from flagtree.profiler.triton_glue.launch_hooks import launch_hook_owner


class LaunchMetadata:
    """What Triton hands its launch hooks (the lazy dict's .data)."""

    def __init__(self, name, stream):
        self.data = {"name": name, "stream": stream}


def triton_launch(lib, kernel, stream=3, ns=1000):
    owner = launch_hook_owner()  # where this Triton keeps its launch hooks
    meta = LaunchMetadata(kernel, stream)
    owner.launch_enter_hook(meta)
    corr = lib.standin_rt_launch(kernel.encode(), stream, ns)
    owner.launch_exit_hook(meta)
    return corr
