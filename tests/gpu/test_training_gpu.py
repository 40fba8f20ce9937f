"""A real training step on the GPU (README, "Threads and autograd"): layers of cuBLAS matmuls and
Triton kernels (an autograd Function whose forward and backward are Triton kernels) and an MSE
loss, each layer under scope(f"layer{i}"), loss.backward() under scope("backward"). PyTorch runs
the CUDA backward pass on its own engine thread; its kernels must land under the caller's scopes
(shadow), under the caller's Python call site (python context), and with
FLAGTREE_PROFILER_BACKWARD_SCOPES=forward under the forward layer each op ran in."""
import pytest
import torch
import triton
import triton.language as tl

import flagtree.profiler as profiler
from support.profiles import load_tree, walk

LAYERS = 4
WIDTH = 512
BATCH = 256


@triton.jit
def scale_forward(x_ptr, scale_ptr, out_ptr, n, width, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    s = tl.load(scale_ptr + offsets % width, mask=mask)
    tl.store(out_ptr + offsets, x * s, mask=mask)


@triton.jit
def scale_backward(grad_ptr, scale_ptr, out_ptr, n, width, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    g = tl.load(grad_ptr + offsets, mask=mask)
    s = tl.load(scale_ptr + offsets % width, mask=mask)
    tl.store(out_ptr + offsets, g * s, mask=mask)


def launch(kernel, a, scale, out):
    n = a.numel()
    kernel[(triton.cdiv(n, 1024),)](a, scale, out, n, scale.numel(), BLOCK=1024)


class TritonScale(torch.autograd.Function):
    """y = x * scale (per feature), both directions in Triton; grad of scale by torch."""

    @staticmethod
    def forward(ctx, x, scale):
        out = torch.empty_like(x)
        launch(scale_forward, x.contiguous(), scale, out)
        ctx.save_for_backward(x, scale)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, scale = ctx.saved_tensors
        grad = grad.contiguous()
        grad_x = torch.empty_like(grad)
        launch(scale_backward, grad, scale, grad_x)
        return grad_x, (grad * x).sum(0)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linears = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS))
        self.scales = torch.nn.ParameterList(torch.nn.Parameter(torch.rand(WIDTH) + 0.5) for _ in range(LAYERS))

    def forward(self, h, scope):
        for i in range(LAYERS):
            with scope(f"layer{i}"):
                h = torch.relu(TritonScale.apply(self.linears[i](h), self.scales[i]))
        return h


def train_step(model, optimizer, x, target, scope):
    with scope("zero_grad"):
        optimizer.zero_grad(set_to_none=False)  # grads exist: AccumulateGrad launches kernels
    h = model(x, scope)
    with scope("loss"):
        loss = torch.nn.functional.mse_loss(h, target)
    with scope("backward"):
        loss.backward()
    with scope("optimizer"):
        optimizer.step()
    torch.cuda.synchronize()


@pytest.fixture(autouse=True)
def close_sessions():
    yield
    profiler.finalize()


@pytest.fixture
def training():
    torch.manual_seed(0)
    model = Model().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, WIDTH, device="cuda")
    target = torch.randn(BATCH, WIDTH, device="cuda")
    import contextlib

    for _ in range(2):  # warm-up outside any session: compile, cuBLAS handles, engine threads
        train_step(model, optimizer, x, target, lambda name: contextlib.nullcontext())
    return lambda scope: train_step(model, optimizer, x, target, scope)


def kernels(path):
    """[(path tuple, time ns, count)] of every kernel node."""
    root, _ = load_tree(path)
    return [(p, n["metrics"].get("time (ns)", 0), n["metrics"].get("count", 0))
            for p, n in walk(root) if n["frame"].get("kind") == "kernel"]


def test_shadow_backward_kernels_are_under_the_callers_scopes(tmp_path, training, monkeypatch):
    monkeypatch.delenv("FLAGTREE_PROFILER_BACKWARD_SCOPES", raising=False)
    profiler.start(str(tmp_path / "shadow"), context="shadow")
    training(profiler.scope)
    profiler.finalize()
    found = kernels(tmp_path / "shadow.hatchet")
    total = sum(t for _, t, _ in found)
    at_root = sum(t for p, t, _ in found if len(p) == 1)
    assert total > 0
    assert at_root <= 0.01 * total, [p for p, _, _ in found if len(p) == 1]
    backward = {p[-1]: c for p, _, c in found if p[:1] == ("backward",)}
    assert backward.get("scale_backward") == LAYERS, backward  # launched on the engine thread


def test_python_context_every_kernel_below_a_frame_of_this_file(tmp_path, training):
    profiler.start(str(tmp_path / "python"), context="python")
    training(profiler.scope)
    profiler.finalize()
    found = kernels(tmp_path / "python.hatchet")
    assert found
    missing = [p for p, _, _ in found if not any("test_training_gpu.py:" in frame for frame in p[:-1])]
    assert not missing, missing[:5]
    # the engine thread's own frames sit below the caller's: TritonScale.backward's launch
    bwd = [p for p, _, _ in found if p[-1] == "scale_backward"]
    assert bwd and all(any("@train_step" in f for f in p) and
                       any("test_training_gpu.py:" in f and f.endswith("@backward") for f in p) for p in bwd)


def test_backward_by_forward_layer(tmp_path, training, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_BACKWARD_SCOPES", "forward")
    profiler.start(str(tmp_path / "forward"), context="shadow")
    training(profiler.scope)
    profiler.finalize()
    found = kernels(tmp_path / "forward.hatchet")
    per_layer = {}
    for p, t, c in found:
        if "<backward>" in p and p[0].startswith("layer"):
            assert p[1] == "<backward>", p  # directly under the layer's own <backward>
            per_layer.setdefault(p[0], {})[p[-1]] = per_layer.get(p[0], {}).get(p[-1], 0) + c
    for i in range(LAYERS):
        layer = per_layer.get(f"layer{i}", {})
        assert layer.get("scale_backward") == 1, (i, per_layer)  # its own Triton backward, once
        assert sum(layer.values()) >= 3, (i, layer)  # and the matmul/relu/bias grads of that layer
    # Left under the caller: only what the calling thread launches itself before the engine
    # runs (the seed gradient of loss.backward(), a fill kernel); no node's kernels.
    with_caller = [p for p, _, _ in found if p[:1] == ("backward",)]
    assert all("fill" in p[-1].lower() for p in with_caller), with_caller
    at_root = sum(t for p, t, _ in found if len(p) == 1)
    assert at_root <= 0.01 * sum(t for _, t, _ in found)


# --- PC sampling on a real torch kernel ---------------------------------------------------------

@pytest.mark.parametrize("elements", [1 << 10, 1 << 20])
def test_pcsampling_default_settings_sample_a_short_torch_fill(tmp_path, elements):
    """A torch fill of ~2 us gets samples at the default settings (range=session, the default
    interval): expected about resident cycles x 4 schedulers per busy SM / 2^interval."""
    import json

    if profiler.available_backends().get("cupti_pcsampling") is not None:
        pytest.skip(f"cupti_pcsampling: {profiler.available_backends()['cupti_pcsampling']}")
    out = torch.empty(elements, device="cuda")
    out.fill_(1.0)  # load torch's module and warm up outside the session
    torch.cuda.synchronize()
    base = str(tmp_path / f"fill{elements}")
    profiler.start(base, backend="cupti_pcsampling")
    for _ in range(20):
        out.fill_(2.0)
    torch.cuda.synchronize()
    profiler.finalize()
    with open(base + ".meta.json") as f:
        metadata = json.load(f)
    diagnosis = {k: v for k, v in metadata.items() if k.startswith("pcsampling_")}
    fills = [(p, n) for p, n in walk(load_tree(base + ".hatchet")[0])
             if n["frame"].get("kind") == "kernel" and "fill" in p[-1].lower()]
    assert fills, diagnosis
    samples = sum(c["metrics"].get("num_samples", 0) for _, n in fills for c in n["children"])
    per_launch_ns = sum(n["metrics"]["time (ns)"] for _, n in fills) / 20
    assert samples > 0, (per_launch_ns, diagnosis)
