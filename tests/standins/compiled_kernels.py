"""Compiled Triton kernels as a library holds them, on the CPU: real ``CompiledKernel`` objects,
made by Triton's own constructor from a kernel's metadata group (the files Triton's cache keeps),
for the stand-in CoreX target (corex_triton.py), loaded as a device would load them, with a
launcher that takes the arguments Triton's launchers take and asks Triton's profile allocator
for the kernel's profile scratch when its metadata asks for some, as NVIDIA's and CoreX's do
(Triton 3.8 and later: only when one is set, else the driver's default profile scratch, here a
host buffer of the launcher's own).

What the "device" runs for a launch is given by the test: ``device(scratch, grid, binary)`` writes
what the binary's stamps would write (nothing for an unstamped binary or a null scratch).
"""
import ctypes
import hashlib
import json
import os

from support.triton_needs import skip_without_compiler_hooks

# The test module importing this one is skipped: Triton 3.6's compiled kernels and hooks.
skip_without_compiler_hooks(module_level=True)

from triton.runtime import _allocation  # noqa: E402

from flagtree.profiler import _native  # noqa: E402

from . import corex_triton  # noqa: E402

_TIMER_TAG = _native.device_timer.device_timer_layout()["align_tag"]  # the device timer's stamps' alignment
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


class StandinCompiler(corex_triton.StandinCorexCompiler):
    def pack_metadata(self, metadata):
        return (metadata.num_warps, metadata.num_ctas, metadata.shared)


class StandinLauncher:
    """Triton's launcher call: (gridX, gridY, gridZ, stream, function, packed metadata, launch
    metadata, enter hook, exit hook, *kernel arguments)."""

    def __init__(self, metadata, device):
        self.metadata, self.device, self.calls = metadata, device, []

    def __call__(self, grid_x, grid_y, grid_z, stream, function, packed, launch_metadata, enter, exit_, *args):
        size = self.metadata.profile_scratch_size
        scratch = 0
        if size > 0:
            blocks = grid_x * grid_y * grid_z
            if getattr(_allocation, "has_profile_allocator", lambda: True)():
                scratch = _allocation._profile_allocator.get()(blocks * size, self.metadata.profile_scratch_align, stream)
            else:
                scratch = self.default_scratch(blocks * size)
        self.calls.append(args)
        self.device(int(scratch or 0), (grid_x, grid_y, grid_z), BINARIES.get(function, b""))

    def default_scratch(self, size):
        if self.metadata.profile_scratch_align == _TIMER_TAG:
            raise AssertionError("a stamped kernel got Triton's default profile scratch: its stamps write past it")
        self.default_buffer = ctypes.create_string_buffer(size)  # kept until the next launch
        return ctypes.addressof(self.default_buffer)


BINARIES = {}  # function handle -> the binary loaded for it


class StandinUtils:
    """The driver's utils: load_binary gives each binary a function handle of its own."""

    @staticmethod
    def load_binary(name, binary, shared, device):
        function = 0x1000 + len(BINARIES)
        BINARIES[function] = binary
        return object(), function, 32, 0, 1024


class StandinDriver(corex_triton.StandinCorexDriver):
    compiler_cls = StandinCompiler
    utils = StandinUtils()
    device = None  # what the device runs for a launch: device(scratch, grid, binary), set by the test

    @staticmethod
    def launcher_cls(src, metadata):
        return StandinLauncher(metadata, lambda *launch: StandinDriver.device(*launch))


def kernel_hash(name="add_kernel", scratch=(0, 1)):
    """The hash (hex, as Triton's) of the kernel compiled_kernel makes."""
    return hashlib.sha256(f"{name}:{scratch}".encode()).hexdigest()


def compiled_kernel(folder, src, name="add_kernel", scratch=(0, 1), stages=("llir",)):
    """A CompiledKernel of `src` (an ASTSource) made from a metadata group written in `folder`, as
    Triton's cache hands one back, keeping the text of `stages` and its binary; loaded, its
    launcher the driver's. `scratch`: (profile_scratch_size, profile_scratch_align) in its metadata."""
    from triton.compiler.compiler import CompiledKernel

    metadata = {"name": name, "target": {"backend": "corex", "arch": 71, "warp_size": 64}, "num_warps": 4,
                "num_ctas": 1, "shared": 0, "profile_scratch_size": scratch[0], "profile_scratch_align": scratch[1],
                "instrumentation_mode": ""}
    os.makedirs(folder, exist_ok=True)
    texts = {f"{name}.json": json.dumps(metadata), f"{name}.cubin": b"standin-cubin:" + corex_triton.LLIR.encode()}
    texts.update({f"{name}.{stage}": corex_triton.LLIR for stage in stages})
    group = {}
    for file_name, text in texts.items():
        group[file_name] = os.path.join(folder, file_name)
        with open(group[file_name], "wb" if isinstance(text, bytes) else "w") as out:
            out.write(text)
    kernel = CompiledKernel(src, group, kernel_hash(name, scratch))
    # What _init_handles leaves on a device: the module, the function and the launcher.
    kernel.module, function, *_ = StandinUtils.load_binary(name, kernel.kernel, 0, 0)
    kernel.function = function
    kernel._run = StandinDriver.launcher_cls(src, kernel.metadata)
    return kernel


class StandinStaticLauncher:
    """torch's static CUDA launcher (``torch._C._StaticCudaLauncher``): loads a cubin file and
    launches a function with its arguments typed by a string, "O" a pointer (None: null)."""

    @staticmethod
    def _load_kernel(path, name, shared, device):
        with open(path, "rb") as f:
            module, function, *_ = StandinUtils.load_binary(name, f.read(), shared, device)
        return module, function, 32, 0

    @staticmethod
    def _launch_kernel(function, grid_x, grid_y, grid_z, num_warps, shared, arg_tys, args, stream):
        assert len(arg_tys) == len(args) and arg_tys[-1] == "O", (arg_tys, args)
        StandinDriver.device(int(args[-1] or 0), (grid_x, grid_y, grid_z), BINARIES.get(function, b""))
