"""The interpreter backend and hook="triton" on the interpreters of Triton 3.1 to 3.5, whose
``InterpretedFunction`` has no class-level ``run`` (tests/standins/interpreter_shapes.py): every
launch is recorded, by ``kernel[grid]`` and by ``kernel.run(grid=...)`` (the autotuner's and
heuristics' way), and the class is left as it was found."""
import warnings

import pytest
import torch

import flagtree.profiler as profiler
from flagtree.profiler.triton_glue import interpreter as glue
from standins import interpreter_shapes
from support.kernels import copy_kernel
from support.profiles import metrics_by_path

N, BLOCK = 64, 32


def copy_meta(grid, metadata, args):
    return {"name": f"copy_{args['n']}", "bytes": 8 * args["n"]}


def _launch_both_ways(kernel):
    x, out = torch.arange(N, dtype=torch.float32), torch.zeros(N)
    kernel[(N // BLOCK,)](x, out, N, BLOCK=BLOCK)
    assert torch.equal(out, x)
    out.zero_()
    kernel.run(x, out, N, BLOCK=BLOCK, grid=(N // BLOCK,))  # as Triton 3.1's heuristics call it
    assert torch.equal(out, x)


@pytest.mark.parametrize("shape", interpreter_shapes.SHAPES)
def test_every_launch_is_recorded_and_the_class_put_back(tmp_path, monkeypatch, shape):
    cls = interpreter_shapes.install(monkeypatch, shape)
    getitem = vars(cls).get("__getitem__")
    kernel = cls(copy_kernel.fn)
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter")
    with profiler.scope("step"):
        _launch_both_ways(kernel)
    profiler.finalize(sid)
    assert metrics_by_path(tmp_path / "p.hatchet")[("step", "copy_kernel")]["count"] == 2
    assert glue.launch_entry() is None and vars(cls).get("__getitem__") is getitem
    assert "run" in vars(kernel)  # the instance's own closure, untouched


def test_installs_stack_and_undo_in_any_order(monkeypatch):
    cls = interpreter_shapes.install(monkeypatch, "3.1")
    kernel = cls(copy_kernel.fn)
    seen = []

    def wrap(label):
        def make(original):
            def run(interpreted, *args, grid, warmup, **kwargs):
                seen.append(label)
                return original(interpreted, *args, grid=grid, warmup=warmup, **kwargs)
            return run
        return make

    undo_a = glue.install_launch(wrap("a"))
    undo_b = glue.install_launch(wrap("b"))
    _launch_both_ways(kernel)
    assert seen == ["b", "a", "b", "a"]
    undo_a()  # out of order: "a" only forwards from now on
    seen.clear()
    _launch_both_ways(kernel)
    assert seen == ["b", "b"]
    undo_b()
    seen.clear()
    _launch_both_ways(kernel)
    assert seen == [] and isinstance(glue.launch_entry(), glue._PerInstanceRun)
    # "a" stays installed beneath, forwarding, until the stand-in class is dropped with the test


@pytest.mark.parametrize("shape", ["3.3", "3.5"])
def test_launch_metadata_is_read_where_the_interpreter_keeps_it(tmp_path, monkeypatch, shape):
    cls = interpreter_shapes.install(monkeypatch, shape)
    kernel = cls(copy_kernel.fn, launch_metadata=copy_meta)
    assert glue.keeps_jit_options()
    sid = profiler.start(str(tmp_path / "p"), backend="interpreter", hook="triton")
    _launch_both_ways(kernel)
    profiler.finalize(sid)
    node = metrics_by_path(tmp_path / "p.hatchet")[(f"copy_{N}",)]
    assert node["count"] == 2 and node["bytes"] == 2 * 8 * N


def test_triton_3_1_interpreter_dropping_launch_metadata_is_said(tmp_path, monkeypatch):
    cls = interpreter_shapes.install(monkeypatch, "3.1")
    kernel = cls(copy_kernel.fn)
    assert not glue.keeps_jit_options()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sid = profiler.start(str(tmp_path / "p"), backend="interpreter", hook="triton")
    _launch_both_ways(kernel)
    profiler.finalize(sid)
    said = [str(w.message) for w in caught if "launch_metadata" in str(w.message)]
    assert len(said) == 1 and "drops triton.jit's launch_metadata" in said[0], said
    assert metrics_by_path(tmp_path / "p.hatchet")[("copy_kernel",)]["count"] == 2
