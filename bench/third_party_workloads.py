"""Training steps whose Triton kernels come from code no one here wrote, each launching them its
own way. GPU only; each builder returns ``step()`` (one forward, backward and optimizer step,
synchronized) or raises ImportError naming the missing package.

* liger: Liger-Kernel's RMSNorm, SwiGLU and cross entropy (``liger_kernel.transformers``): Triton
  kernels launched through ``JITFunction.run``;
* flaggems: a plain torch MLP under ``flag_gems.use_gems()``: FlagGems' operators, launched
  through its own cache of compiled kernels (``LibEntry``), compiled at the warm-up;
* compile / compile_ro: the same MLP through ``torch.compile`` (default mode, and
  ``mode="reduce-overhead"``: CUDA graphs): inductor's launchers, its kernels compiled at the
  warm-up (by its compile workers or in process).

The wheels of Liger-Kernel and FlagGems travel to the GPU machine in ``.whl/`` (shared/DEVICE.md).
"""
import torch

HIDDEN, BATCH, VOCAB = 1024, 256, 4096


class _Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(HIDDEN)
        self.up = torch.nn.Linear(HIDDEN, 2 * HIDDEN)
        self.down = torch.nn.Linear(2 * HIDDEN, HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, VOCAB)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.up(self.norm(x)))
        return self.head(x + self.down(h).softmax(dim=-1))


def _data():
    torch.manual_seed(0)
    x = torch.randn(BATCH, HIDDEN, device="cuda")
    target = torch.randint(0, VOCAB, (BATCH,), device="cuda")
    return x, target


def _training_step(model, forward_loss):
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = forward_loss()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()

    return step


def liger():
    from liger_kernel.transformers import LigerCrossEntropyLoss, LigerRMSNorm
    from liger_kernel.transformers.functional import liger_swiglu

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = LigerRMSNorm(HIDDEN)
            self.gate = torch.nn.Linear(HIDDEN, 2 * HIDDEN, bias=False)
            self.up = torch.nn.Linear(HIDDEN, 2 * HIDDEN, bias=False)
            self.down = torch.nn.Linear(2 * HIDDEN, HIDDEN, bias=False)
            self.head = torch.nn.Linear(HIDDEN, VOCAB, bias=False)

        def forward(self, x):
            h = self.norm(x)
            return self.head(x + self.down(liger_swiglu(self.gate(h), self.up(h))))

    model = Block().cuda()
    x, target = _data()
    loss = LigerCrossEntropyLoss()
    return _training_step(model, lambda: loss(model(x), target))


def flaggems():
    import flag_gems

    model = _Mlp().cuda()
    x, target = _data()

    step = _training_step(model, lambda: torch.nn.functional.cross_entropy(model(x), target))

    def gems_step():
        with flag_gems.use_gems():  # forward, backward and the optimizer's operators
            step()

    return gems_step


def compiled(mode=None):
    model = _Mlp().cuda()
    x, target = _data()
    forward = torch.compile(model, mode=mode)

    def forward_loss():
        return torch.nn.functional.cross_entropy(forward(x), target)

    return _training_step(model, forward_loss)


BUILDERS = {"liger": liger, "flaggems": flaggems, "compile": compiled,
            "compile_ro": lambda: compiled("reduce-overhead")}


def triton_kernel_names():
    """Names of the Triton kernels compiled in this process: Triton's CompiledKernel objects and
    inductor's statically launched kernels (what CUPTI's records of Triton launches are named)."""
    import gc

    names = set()
    for obj in gc.get_objects():
        kind = type(obj).__name__
        if kind == "CompiledKernel" or kind.startswith("StaticallyLaunched"):
            name = getattr(obj, "name", None)
            if isinstance(name, str):
                names.add(name)
    return names
