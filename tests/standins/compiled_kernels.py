"""Compiled Triton kernels as a library holds them, on the CPU: real ``CompiledKernel`` objects,
made by Triton's own constructor from a kernel's metadata group (the files Triton's cache keeps),
for the stand-in CoreX target (corex_triton.py), loaded as a device would load them, with a
launcher that takes the arguments Triton's launchers take and asks Triton's profile allocator
for the kernel's profile scratch when its metadata asks for some, as NVIDIA's and CoreX's do.

What the "device" runs for a launch is given by the test: ``device(scratch, grid)`` writes what
the kernel's stamps would write (nothing for an unstamped kernel).
"""
import json
import os

from triton.runtime import _allocation

from . import corex_triton

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
            scratch = _allocation._profile_allocator.get()(blocks * size, self.metadata.profile_scratch_align, stream)
        self.calls.append(args)
        self.device(int(scratch or 0), (grid_x, grid_y, grid_z))


class StandinDriver(corex_triton.StandinCorexDriver):
    compiler_cls = StandinCompiler


def compiled_kernel(folder, src, device, name="add_kernel", scratch=(0, 1)):
    """A CompiledKernel of `src` (an ASTSource) made from a metadata group written in `folder`, as
    Triton's cache hands one back; loaded, its launcher a StandinLauncher running `device`.
    `scratch`: (profile_scratch_size, profile_scratch_align) in its metadata."""
    from triton.compiler.compiler import CompiledKernel

    metadata = {"name": name, "target": {"backend": "corex", "arch": 71, "warp_size": 64}, "num_warps": 4,
                "num_ctas": 1, "shared": 0, "profile_scratch_size": scratch[0], "profile_scratch_align": scratch[1],
                "instrumentation_mode": ""}
    os.makedirs(folder, exist_ok=True)
    group = {f"{name}.json": os.path.join(folder, f"{name}.json"), f"{name}.cubin": os.path.join(folder, f"{name}.cubin")}
    with open(group[f"{name}.json"], "w") as out:
        json.dump(metadata, out)
    with open(group[f"{name}.cubin"], "wb") as out:
        out.write(b"standin-cubin")
    kernel = CompiledKernel(src, group, f"hash-{name}-{scratch[0]}")
    # What _init_handles leaves on a device: the module, the function and the launcher.
    kernel.module, kernel.function = object(), 0x1234
    kernel._run = StandinLauncher(kernel.metadata, device)
    return kernel
