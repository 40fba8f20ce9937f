"""One workload profiled by either profiler, for the cross-check against Triton's Proton.

    python workload.py ours|proton OUTPUT_BASE
Launches a fixed mix of Triton and torch (cuBLAS) kernels inside scopes, after a warm-up
outside the session, and writes OUTPUT_BASE.hatchet.
"""
import sys

import torch

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.dirname(__file__)))
from support.kernels import launch_add, launch_copy  # noqa: E402

ADD_LAUNCHES = 300
COPY_LAUNCHES = 200
MATMULS = 40


def work(x, y, out, a, b, scope):
    with scope("elementwise"):
        for _ in range(ADD_LAUNCHES):
            launch_add(x, y, out, block=1024)
        for _ in range(COPY_LAUNCHES):
            launch_copy(x, out, block=1024)
    with scope("matmul"):
        for _ in range(MATMULS):
            torch.mm(a, b)
    torch.cuda.synchronize()


def main(which, base):
    n = 1 << 22
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    if which == "ours":
        import flagtree.profiler as prof
    else:
        import triton.profiler as prof
    import contextlib

    work(x, y, out, a, b, lambda name: contextlib.nullcontext())  # warm-up: compile, cuBLAS init
    prof.start(base, context="shadow")
    work(x, y, out, a, b, prof.scope)
    prof.finalize()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
