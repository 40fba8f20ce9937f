"""Kernels with kernel-side scopes (flagtree.profiler.language) shared by the GPU tests and
bench/instrumentation.py; apart from kernels.py, which the Proton cross-check imports without
loading flagtree.profiler."""
import triton
import triton.language as tl

import flagtree.profiler.language as pl


# The vector add with two kernel-side scopes (backend="instrumentation").
@triton.jit
def add_two_scopes(x, y, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    with pl.scope("load"):
        a = tl.load(x + offsets, mask=mask)
        b = tl.load(y + offsets, mask=mask)
    with pl.scope("store"):
        tl.store(out + offsets, a + b, mask=mask)
