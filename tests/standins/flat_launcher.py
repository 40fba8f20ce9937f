"""Triton 3.5 and 3.6's NVIDIA launcher call (``CudaLauncher.__call__``), as it behaves: each
scratch that the kernel's metadata asks for (size > 0) comes from its allocator (Triton's global
one, then the profile one), for every block of every CTA, and the launcher module's ``launch``
gets the grid, stream and function, the cooperative-grid and PDL flags, the two scratch pointers
(None where none is asked for) and then everything the caller passed after the function. It
reads exactly what Triton's reads (launcher_layout.py tells the layout from those names)."""
from triton.runtime import _allocation


class FlatLauncher:
    def __call__(self, gridX, gridY, gridZ, stream, function, *args):
        global_scratch = profile_scratch = None
        if self.global_scratch_size > 0:
            global_scratch = _allocation._allocator.get()(
                gridX * gridY * gridZ * self.num_ctas * self.global_scratch_size, self.global_scratch_align, stream)
        if self.profile_scratch_size > 0:
            profile_scratch = _allocation._profile_allocator.get()(
                gridX * gridY * gridZ * self.num_ctas * self.profile_scratch_size, self.profile_scratch_align, stream)
        self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid, self.launch_pdl,
                    global_scratch, profile_scratch, *args)
