"""Backward by forward layer (FLAGTREE_PROFILER_BACKWARD_SCOPES=forward): each backward kernel
goes under the forward scope its op ran in, below a "<backward>" scope. Real torch CPU autograd;
the layers are autograd Functions whose forward and backward launch Triton kernels."""
import pytest
import torch

import flagtree.profiler as profiler
from support.kernels import launch_add, launch_copy, tensors
from support.profiles import kernel_counts, load_tree

TAG = "flagtree_profiler_scopes"


class Layer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        a, b, out = tensors()
        launch_add(a, b, out)
        return x * 3

    @staticmethod
    def backward(ctx, grad):
        a, _, out = tensors()
        launch_copy(a, out)
        return grad * 3


@pytest.fixture(autouse=True)
def no_open_sessions():
    yield
    profiler.finalize()


def train_step(layers=3):
    x = torch.ones(4, requires_grad=True)
    h = x
    nodes = []
    with profiler.scope("model"):
        for i in range(layers):
            with profiler.scope(f"layer{i}"):
                h = Layer.apply(h)
                nodes.append(h.grad_fn)
                with profiler.scope("mlp"):
                    h = torch.relu(h @ torch.eye(4))  # torch ops: tagged through their graph nodes
                    nodes.append(h.grad_fn)
    loss = h.sum()
    with profiler.scope("backward"):
        loss.backward()
    return x, nodes


def test_backward_kernels_under_their_forward_layer(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_BACKWARD_SCOPES", "forward")
    profiler.start(str(tmp_path / "f"))
    x, nodes = train_step()
    profiler.finalize()
    assert x.grad.tolist() == [27.0] * 4  # the hooks leave the gradients alone
    counts = kernel_counts(load_tree(tmp_path / "f.hatchet")[0])
    expected = {("model", f"layer{i}", "add_kernel"): 1 for i in range(3)}
    expected.update({("model", f"layer{i}", "<backward>", "copy_kernel"): 1 for i in range(3)})
    assert counts == expected
    # torch's own nodes carry the forward scope in their metadata (mlp, matmul and relu)
    assert nodes[1].metadata[TAG] == ["model", "layer0", "mlp", "<backward>"]
    assert nodes[4].metadata[TAG] == ["model", "layer2", "<backward>"]


def test_default_puts_backward_kernels_under_the_caller(tmp_path, monkeypatch):
    monkeypatch.delenv("FLAGTREE_PROFILER_BACKWARD_SCOPES", raising=False)
    profiler.start(str(tmp_path / "c"))
    _, nodes = train_step()
    profiler.finalize()
    counts = kernel_counts(load_tree(tmp_path / "c.hatchet")[0])
    assert counts[("backward", "copy_kernel")] == 3
    assert TAG not in nodes[0].metadata


def test_second_backward_of_a_retained_graph_is_tagged_once(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_BACKWARD_SCOPES", "forward")
    profiler.start(str(tmp_path / "r"))
    x = torch.ones(4, requires_grad=True)
    with profiler.scope("layer0"):
        y = Layer.apply(x)
    loss = y.sum()
    loss.backward(retain_graph=True)
    loss.backward()
    profiler.finalize()
    counts = kernel_counts(load_tree(tmp_path / "r.hatchet")[0])
    # one pre/post pair per node, however many walks: two backward launches, one node each time
    assert counts[("layer0", "<backward>", "copy_kernel")] == 2
    assert x.grad.tolist() == [6.0] * 4


def test_bad_value_is_an_error_at_start(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGTREE_PROFILER_BACKWARD_SCOPES", "layers")
    with pytest.raises(ValueError, match="caller or forward"):
        profiler.start(str(tmp_path / "bad"))
    assert profiler.session.open_sessions() == []
