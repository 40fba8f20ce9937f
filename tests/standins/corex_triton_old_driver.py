"""The stand-in CoreX target (corex_triton.py) with the launcher of CoreX's Triton before its 3.6
port: it launches the kernel without a profile scratch pointer (no call of Triton's profile
allocator), so the device_timer route cannot hand a launch its ring slot."""
from standins.corex_triton import StandinCorexCompiler, StandinCorexDriver


class OldCorexLauncher:
    def __init__(self, metadata, kernel):
        self.kernel = kernel

    def __call__(self, grid, stream):
        self.kernel(0, grid)


class OldCorexDriver(StandinCorexDriver):
    launcher_cls = OldCorexLauncher
    compiler_cls = StandinCorexCompiler
