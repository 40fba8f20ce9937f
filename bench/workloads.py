"""The benchmark workloads, each a function of a `scope` factory so that every profiler's
annotations run the same code. GPU only."""
import os
import sys

import torch
import triton
import triton.language as tl

# The vector add is the example's kernel (one copy for examples, tests and bench).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
from triton_kernels import add_kernel as _add  # noqa: E402


@triton.jit
def _softmax(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * cols + offsets, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gelu(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = 0.5 * x * (1 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


class LaunchBound:
    """20,000 launches of a one-block vector add: the profiler's per-launch cost laid bare."""

    def __init__(self, launches=20_000):
        self.launches = launches
        self.x = torch.rand(1024, device="cuda")
        self.y = torch.rand(1024, device="cuda")
        self.out = torch.empty_like(self.x)

    def __call__(self, scope):
        x, y, out = self.x, self.y, self.out
        with scope("launch_bound"):
            for _ in range(self.launches):
                _add[(1,)](x, y, out, 1024, BLOCK=1024)
        torch.cuda.synchronize()


class GpuBound:
    """bf16 8192^3 matmuls: the device is the bottleneck, so the profiler should cost ~nothing."""

    def __init__(self, matmuls=200, size=8192):
        self.matmuls = matmuls
        self.a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        self.b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)

    def __call__(self, scope):
        with scope("gpu_bound"):
            for _ in range(self.matmuls):
                torch.mm(self.a, self.b)
        torch.cuda.synchronize()


class TransformerBlock:
    """A small transformer's forward, repeated: torch matmuls and Triton kernels in nested scopes."""

    def __init__(self, layers=8, tokens=2048, dim=1024, heads=8, passes=20):
        self.layers, self.tokens, self.dim, self.heads, self.passes = layers, tokens, dim, heads, passes
        dt = torch.bfloat16
        self.x = torch.randn(tokens, dim, device="cuda", dtype=dt)
        self.wqkv = torch.randn(dim, 3 * dim, device="cuda", dtype=dt) / dim ** 0.5
        self.wo = torch.randn(dim, dim, device="cuda", dtype=dt) / dim ** 0.5
        self.w1 = torch.randn(dim, 4 * dim, device="cuda", dtype=dt) / dim ** 0.5
        self.w2 = torch.randn(4 * dim, dim, device="cuda", dtype=dt) / (4 * dim) ** 0.5

    def _attention(self, h, scope):
        t, d, nh = self.tokens, self.dim, self.heads
        with scope("qkv"):
            q, k, v = (h @ self.wqkv).split(d, dim=1)
        q, k, v = (z.reshape(t, nh, d // nh).transpose(0, 1) for z in (q, k, v))
        with scope("scores"):
            s = torch.bmm(q, k.transpose(1, 2)).contiguous()
        with scope("softmax"):
            p = torch.empty_like(s)
            _softmax[(nh * t,)](s, p, t, BLOCK=triton.next_power_of_2(t))
        with scope("context"):
            o = torch.bmm(p, v).transpose(0, 1).reshape(t, d)
            return o @ self.wo

    def _mlp(self, h, scope):
        with scope("up"):
            u = h @ self.w1
        with scope("gelu"):
            g = torch.empty_like(u)
            _gelu[(triton.cdiv(u.numel(), 1024),)](u, g, u.numel(), BLOCK=1024)
        with scope("down"):
            return g @ self.w2

    def _residual(self, a, b):
        out = torch.empty_like(a)
        _add[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out

    def __call__(self, scope):
        for _ in range(self.passes):
            self._forward(scope)
        torch.cuda.synchronize()

    def _forward(self, scope):
        h = self.x
        for _ in range(self.layers):
            with scope("block"):
                with scope("attention"):
                    h = self._residual(h, self._attention(torch.nn.functional.layer_norm(h, (self.dim,)), scope))
                with scope("mlp"):
                    h = self._residual(h, self._mlp(torch.nn.functional.layer_norm(h, (self.dim,)), scope))


WORKLOADS = {"launch": LaunchBound, "gpu": GpuBound, "mix": TransformerBlock}
