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


@triton.jit
def _gelu_backward(x_ptr, grad_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    g = tl.load(grad_ptr + offsets, mask=mask).to(tl.float32)
    cdf = 0.5 * (1 + tl.erf(x * 0.7071067811865476))
    pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
    tl.store(out_ptr + offsets, (g * (cdf + x * pdf)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_backward(p_ptr, grad_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    p = tl.load(p_ptr + row * cols + offsets, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(grad_ptr + row * cols + offsets, mask=mask, other=0.0).to(tl.float32)
    out = p * (g - tl.sum(p * g, axis=0))
    tl.store(out_ptr + row * cols + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


class _Gelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        _gelu[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        ctx.save_for_backward(x)
        return out

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        grad, out = grad.contiguous(), torch.empty_like(x)
        _gelu_backward[(triton.cdiv(x.numel(), 1024),)](x, grad, out, x.numel(), BLOCK=1024)
        return out


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s):
        s = s.contiguous()
        rows, cols = s.numel() // s.shape[-1], s.shape[-1]
        p = torch.empty_like(s)
        _softmax[(rows,)](s, p, cols, BLOCK=triton.next_power_of_2(cols))
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        grad, out = grad.contiguous(), torch.empty_like(p)
        rows, cols = p.numel() // p.shape[-1], p.shape[-1]
        _softmax_backward[(rows,)](p, grad, out, cols, BLOCK=triton.next_power_of_2(cols))
        return out


class TransformerTraining:
    """Training steps of a small transformer whose softmax and GELU are Triton kernels in the
    forward and the backward (autograd's engine thread launches the backward ones), with torch
    matmuls, layer norms and an SGD update around them, each layer in a scope."""

    def __init__(self, layers=4, tokens=1024, dim=512, heads=8, steps=10):
        self.layers, self.tokens, self.dim, self.heads, self.steps = layers, tokens, dim, heads, steps
        dt = torch.bfloat16

        def weight(rows, cols):
            return (torch.randn(rows, cols, device="cuda", dtype=dt) / rows ** 0.5).requires_grad_()

        self.x = torch.randn(tokens, dim, device="cuda", dtype=dt)
        self.weights = [[weight(dim, 3 * dim), weight(dim, dim), weight(dim, 4 * dim), weight(4 * dim, dim)]
                        for _ in range(layers)]

    def _layer(self, h, w, scope):
        t, d, nh = self.tokens, self.dim, self.heads
        wqkv, wo, w1, w2 = w
        with scope("attention"):
            q, k, v = (torch.nn.functional.layer_norm(h, (d,)) @ wqkv).split(d, dim=1)
            q, k, v = (z.reshape(t, nh, d // nh).transpose(0, 1) for z in (q, k, v))
            p = _Softmax.apply(torch.bmm(q, k.transpose(1, 2)))
            h = h + torch.bmm(p, v).transpose(0, 1).reshape(t, d) @ wo
        with scope("mlp"):
            return h + _Gelu.apply(torch.nn.functional.layer_norm(h, (d,)) @ w1) @ w2

    def __call__(self, scope):
        for _ in range(self.steps):
            with scope("step"):
                h = self.x
                with scope("forward"):
                    for w in self.weights:
                        with scope("layer"):
                            h = self._layer(h, w, scope)
                with scope("backward"):
                    h.float().pow(2).mean().backward()
                with scope("update"), torch.no_grad():
                    for w in self.weights:
                        for p in w:
                            p -= 1e-3 * p.grad
                            p.grad = None
        torch.cuda.synchronize()


WORKLOADS = {"launch": LaunchBound, "gpu": GpuBound, "mix": TransformerBlock, "train": TransformerTraining}
