"""A launch as triton-ascend makes it, for the cann stand-in tests: Triton's launch hooks around
rtKernelLaunch (the stand-in's standin_rt_launch), which MSPTI's callbacks never see."""


class LaunchMetadata:
    """What Triton hands its launch hooks (the lazy dict's .data)."""

    def __init__(self, name, stream):
        self.data = {"name": name, "stream": stream}


def triton_launch(lib, kernel, stream=3, ns=1000):
    from triton import knobs

    meta = LaunchMetadata(kernel, stream)
    knobs.runtime.launch_enter_hook(meta)
    corr = lib.standin_rt_launch(kernel.encode(), stream, ns)
    knobs.runtime.launch_exit_hook(meta)
    return corr
