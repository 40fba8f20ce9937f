"""A small Triton program profiled with scopes, a state and custom metrics.

    flagtree-profiler examples/vector_add.py          # or: python examples/vector_add.py
    flagtree-profiler-viewer vector_add.hatchet

On a machine without a GPU, run it with TRITON_INTERPRET=1: Triton's interpreter executes the
kernels on the CPU and the profiler's interpreter backend records them.
"""
import os
import sys

import torch
import triton
import triton.language as tl

import flagtree.profiler as profiler
from triton_kernels import add_kernel  # beside this file (the script's folder is on sys.path)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


def device():
    return "cpu" if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available() else "cuda"


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out


def scale(x, factor):
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, factor, BLOCK=256)
    return out


def run(steps=3, n=4096):
    x = torch.rand(n, device=device())
    y = torch.rand(n, device=device())
    for _ in range(steps):
        with profiler.scope("add", {"bytes": 3 * 4 * n}):
            z = add(x, y)
        with profiler.cpu_timed_scope("scale"):
            with profiler.state("fused"):
                z = scale(z, 0.5)
    return z


if __name__ == "__main__":
    if os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available():
        print("vector_add: no GPU here; run with TRITON_INTERPRET=1 to profile Triton's interpreter on the CPU",
              file=sys.stderr)
        sys.exit(1)
    # Under flagtree-profiler this start() is taken over by the command's own session.
    profiler.start(os.environ.get("VECTOR_ADD_PROFILE", "vector_add"), context="shadow")
    run()
    profiler.finalize()
