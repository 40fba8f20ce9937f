"""Kernels with kernel-side scopes (flagtree.profiler.language) shared by the GPU tests,
bench/instrumentation.py and dev/probe_instrumentation.py; apart from kernels.py, which the Proton cross-check imports without
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


# A long scope then a short one on every warp: their cycles must keep that ratio.
@triton.jit
def long_then_short(x, out, LONG: tl.constexpr, SHORT: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offsets)
    with pl.scope("long"):
        for _ in range(LONG):
            v = v * 1.0001 + 0.5
    with pl.scope("short"):
        for _ in range(SHORT):
            v = v * 0.9999 + 0.25
    tl.store(out + offsets, v)
