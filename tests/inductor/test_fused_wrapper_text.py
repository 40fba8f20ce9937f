"""What inductor's kernels fuse, read from two real wrapper modules (forward and backward of
Linear+LayerNorm+GELU+Linear+Softmax, compiled by torch 2.11 with Triton 3.6 on an H200), and the
codegen hook's source lines tied to a wrapper's kernel by its comment block."""
import sys
import types
from pathlib import Path

import pytest

from flagtree.profiler.inductor import codegen_hook
from flagtree.profiler.inductor.wrapper_text import comment_key, parse_wrapper

DATA = Path(__file__).resolve().parent.parent / "data" / "inductor"
FORWARD = DATA / "forward_linear_layernorm_gelu_linear_softmax.wrapper.txt"
BACKWARD = DATA / "backward_linear_layernorm_gelu_linear_softmax.wrapper.txt"


def test_every_triton_kernel_of_the_forward_wrapper_with_its_aten_ops_and_source_nodes():
    found = parse_wrapper(FORWARD.read_text())
    assert list(found) == ["triton_per_fused_gelu_native_layer_norm_0",
                           "triton_per_fused__softmax_exp_prepare_softmax_online_sub_sum_1",
                           "triton_per_fused__softmax_exp_sub_sum_2"]
    first = found["triton_per_fused_gelu_native_layer_norm_0"]
    assert first["fused_aten"] == ["aten.native_layer_norm", "aten.gelu"]
    assert first["fused_nodes"] == ["input_2", "input_3"]
    assert found["triton_per_fused__softmax_exp_prepare_softmax_online_sub_sum_1"]["fused_aten"] == [
        "prims.prepare_softmax_online", "aten.sub", "aten.exp", "aten._softmax", "aten.sum"]


def test_the_backward_wrapper_and_its_call_site_comments_are_not_kernels():
    found = parse_wrapper(BACKWARD.read_text())
    assert len(found) == 5  # the call() body repeats the origins comment before each call: not counted
    assert found["triton_per_fused_sum_1"] == {
        "fused_aten": ["aten.sum"], "fused_nodes": ["sum_4"], "key": found["triton_per_fused_sum_1"]["key"]}
    assert found["triton_per_fused_sum_1"]["key"][0].startswith("# Topologically Sorted Source Nodes: [sum_4]")
    assert found["triton_per_fused_sum_1"]["key"] != found["triton_per_fused_sum_4"]["key"]


def test_unsorted_origins_and_a_kernel_without_comments():
    text = ("# Unsorted Source Nodes: [a, b], Original ATen: [aten.add]\n"
            "k0 = async_compile.triton('k0', '''\n# Topologically Sorted Source Nodes: [x], Original ATen: [aten.x]\n"
            "''', device_str='cuda')\n\nk1 = async_compile.triton('k1', '''\n''', device_str='cuda')\n")
    found = parse_wrapper(text)
    assert list(found) == ["k0"] and found["k0"]["fused_aten"] == ["aten.add"]
    assert found["k0"]["fused_nodes"] == ["a", "b"]


class _Node:
    def __init__(self, trace, op="call_function"):
        self.meta, self.op = {"stack_trace": trace}, op


def _trace(line, function="forward"):
    return (f'  File "/m/train.py", line 9, in main\n    y = model(x)\n'
            f'  File "/m/model.py", line {line}, in {function}\n    x = self.ln(x)\n')


def test_source_lines_are_the_innermost_frames_in_order_without_repeats():
    nodes = [_Node(_trace(12)), _Node(_trace(12)), _Node(_trace(14)), _Node(None)]
    assert codegen_hook.source_lines(nodes) == ["/m/model.py:12 in forward", "/m/model.py:14 in forward"]


def test_source_lines_are_the_models_not_torchs_own_code_it_called():
    inner = _trace(12) + '  File "/t/torch/nn/modules/normalization.py", line 229, in forward\n    return F.ln(x)\n'
    only_torch = '  File "/t/torch/nn/functional.py", line 7, in gelu\n    g\n'
    lines = codegen_hook.source_lines([_Node(inner), _Node(only_torch)], "/t/torch/")
    assert lines == ["/m/model.py:12 in forward", "/t/torch/nn/functional.py:7 in gelu"]


def _kernel_comment(text, name):
    """(origins line, the detailed lines) above kernel `name` in a wrapper, as inductor returned them."""
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(f"{name} = async_compile.triton("))
    start = max(i for i in range(end) if lines[i].startswith("# kernel path:"))
    return lines[start + 1], "\n".join(lines[start + 2:end])


def test_the_wrapped_codegen_function_ties_its_source_lines_to_the_wrapper_kernel(monkeypatch):
    text = FORWARD.read_text()
    name = "triton_per_fused__softmax_exp_sub_sum_2"
    comment = _kernel_comment(text, name)
    codegen = types.ModuleType("fake_codegen")
    codegen.get_kernel_metadata = lambda schedule, wrapper: comment
    utils = types.ModuleType("fake_utils")
    utils.aggregate_origins = lambda schedule: schedule
    monkeypatch.setitem(sys.modules, "torch._inductor.utils", utils)
    monkeypatch.setattr(codegen_hook, "SOURCE_LINES", {})
    codegen_hook.wrap(codegen)
    codegen_hook.wrap(codegen)  # a second install leaves one wrapper
    assert codegen.get_kernel_metadata._flagtree_original.__name__ == "<lambda>"
    assert codegen.get_kernel_metadata([_Node(_trace(21, "softmax"))], None) == comment
    key = parse_wrapper(text)[name]["key"]
    assert codegen_hook.SOURCE_LINES == {key: ["/m/model.py:21 in softmax"]}
    assert comment_key(["# kernel path: /x.py", "  ", *"\n".join(comment).splitlines()]) == key


def test_a_failure_while_reading_origins_never_breaks_the_compile(monkeypatch):
    codegen = types.ModuleType("fake_codegen")
    codegen.get_kernel_metadata = lambda schedule, wrapper: ("# a", "# b")
    utils = types.ModuleType("fake_utils")
    utils.aggregate_origins = lambda schedule: 1 / 0
    monkeypatch.setitem(sys.modules, "torch._inductor.utils", utils)
    codegen_hook.wrap(codegen)
    assert codegen.get_kernel_metadata([], None) == ("# a", "# b")


def test_the_hook_goes_in_when_the_codegen_is_imported_later_and_its_finder_then_leaves(tmp_path, monkeypatch):
    (tmp_path / "standin_codegen.py").write_text(
        "def get_kernel_metadata(node_schedule, wrapper):\n    return ('# origins', '# detailed')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(codegen_hook, "CODEGEN", "standin_codegen")
    monkeypatch.delitem(sys.modules, "standin_codegen", raising=False)
    saved = list(sys.meta_path)
    # the package's own finder (waiting for the real codegen) is set aside for this test
    sys.meta_path[:] = before = [f for f in saved if getattr(f, "opened", None) is not codegen_hook.wrap]
    try:
        codegen_hook.install()
        codegen_hook.install()  # one finder, however often installed
        assert len(sys.meta_path) == len(before) + 1
        import standin_codegen  # inductor's first compile

        assert hasattr(standin_codegen.get_kernel_metadata, "_flagtree_original")
        assert sys.meta_path == before
        codegen_hook.install()  # loaded now: wrapped already, no finder added
        assert sys.meta_path == before
    finally:
        sys.meta_path[:] = saved


def test_the_installed_torchs_codegen_and_kernel_writer_tie_source_lines_to_the_kernel(tmp_path):
    """The real torch: its codegen module wrapped at import, its get_kernel_metadata and its
    kernel definition formatter (tests/inductor/inductor_codegen_child.py)."""
    import json  # deferred: only this test reads a child's output
    import os  # deferred: as above
    import subprocess  # deferred: as above

    pytest.importorskip("torch._inductor.codegen.triton")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = Path(__file__).resolve().parent / "inductor_codegen_child.py"
    done = subprocess.run([sys.executable, str(child), str(tmp_path / "wrapper.py")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts == {"triton_poi_fused_add_mul_0": {
        "fused_aten": ["aten.add", "aten.mul"], "fused_nodes": ["add_1", "mul_1"],
        "source_lines": ["/m/model.py:12 in forward", "/m/model.py:14 in forward"]}}
