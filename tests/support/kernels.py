"""Small real Triton kernels shared by the tests (interpreter on CPU, compiled on GPU). The vector
add is the example's own kernel (examples/triton_kernels.py), one copy for examples, tests and bench."""
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples"))
from triton_kernels import add_kernel  # noqa: E402


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def device():
    return "cuda" if torch.cuda.is_available() and not triton_interpreting() else "cpu"


def triton_interpreting():
    import os

    return os.environ.get("TRITON_INTERPRET") == "1"


def tensors(n=64):
    x = torch.arange(n, dtype=torch.float32, device=device())
    return x, torch.ones(n, dtype=torch.float32, device=device()), torch.empty(n, dtype=torch.float32, device=device())


def launch_add(x, y, out, block=64):
    n = x.numel()
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)


def launch_copy(x, out, block=64):
    n = x.numel()
    copy_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
