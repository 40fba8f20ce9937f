"""A profile written by a real session (Triton's interpreter running a kernel named as inductor
names one) carries what the kernel fuses, read from a real wrapper module registered where
inductor keeps its wrappers; read() puts it in DataFrame columns, the viewer prints it with
--fused, the HTML report holds it escaped."""
import json
import sys
import types

import pytest
import triton
import triton.language as tl

import flagtree.profiler as profiler
from flagtree.profiler.inductor import registry
from support.kernels import tensors
from test_fused_wrapper_text import FORWARD
from viewer_helpers_fused import run_viewer

NAME = "triton_per_fused_gelu_native_layer_norm_0"


@triton.jit
def triton_per_fused_gelu_native_layer_norm_0(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def _wrapper(path, variable, kernel_name):
    module = types.ModuleType("fake_wrapper")
    module.__file__ = str(path)
    setattr(module, variable, types.SimpleNamespace(inductor_meta={"kernel_name": kernel_name}))
    return module


def _codecache(monkeypatch, *modules):
    """inductor's PyCodeCache as the registry finds it, holding the given wrapper modules."""
    codecache = types.ModuleType("torch._inductor.codecache")
    codecache.PyCodeCache = types.SimpleNamespace(modules=list(modules), modules_no_attr={})
    monkeypatch.setitem(sys.modules, "torch._inductor.codecache", codecache)
    monkeypatch.setattr(registry, "_PARSED", {})


def _profile(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    x, _, out = tensors()
    sid = profiler.start(str(tmp_path / "run"), backend="interpreter")
    with profiler.scope("step"):
        for _ in range(3):
            triton_per_fused_gelu_native_layer_norm_0[(1,)](x, out, x.numel(), BLOCK=64)
    profiler.finalize(sid)
    return tmp_path / "run.hatchet"


@pytest.fixture
def fused_profile(tmp_path, monkeypatch):
    _codecache(monkeypatch, _wrapper(FORWARD, NAME, NAME))
    return _profile(tmp_path)


def test_the_written_profile_names_the_kernels_fusion_in_its_root_and_on_its_nodes(fused_profile):
    root, _ = json.loads(fused_profile.read_text())
    facts = {"fused_aten": ["aten.native_layer_norm", "aten.gelu"], "fused_nodes": ["input_2", "input_3"]}
    assert list(root)[:2] == ["run_id", "inductor_kernels"]
    assert root["inductor_kernels"][NAME] == facts
    kernel = root["children"][0]["children"][0]
    assert kernel["frame"]["name"] == NAME and kernel["metrics"]["count"] == 3 and not kernel["children"]
    assert {k: kernel["metadata"][k] for k in facts} == facts  # hatchet's and Proton's readers see it there
    assert root["children"][0]["frame"]["name"] == "step" and "metadata" not in root["children"][0]


def test_a_part_the_writer_thread_writes_carries_the_fusion_on_its_kernel_nodes(tmp_path, monkeypatch):
    _codecache(monkeypatch, _wrapper(FORWARD, NAME, NAME))
    x, _, out = tensors()
    sid = profiler.start(str(tmp_path / "run"), backend="interpreter")
    triton_per_fused_gelu_native_layer_norm_0[(1,)](x, out, x.numel(), BLOCK=64)
    (part,) = profiler.flush_part(sid, wait=True)
    profiler.finalize(sid)
    root, _ = json.loads(open(part).read())
    kernel = root["children"][0]
    assert kernel["frame"]["name"] == NAME and kernel["metadata"]["fused_aten"] == ["aten.native_layer_norm", "aten.gelu"]


def test_read_gives_the_fused_columns_on_the_kernel_row_only(fused_profile):
    frame = profiler.read(str(fused_profile)).to_dataframe()
    rows = frame.set_index("name")
    assert rows.loc[NAME, "fused_aten"] == ["aten.native_layer_norm", "aten.gelu"]
    assert rows.loc[NAME, "fused_nodes"] == ["input_2", "input_3"]
    assert rows.loc[NAME, "source_lines"] is None  # compiled in no process that watched inductor
    assert rows.loc["step", "fused_aten"] is None


def test_a_diff_keeps_the_fused_columns(fused_profile, tmp_path, monkeypatch):
    mine = profiler.read(str(fused_profile))
    monkeypatch.setitem(sys.modules, "torch._inductor.codecache", types.ModuleType("no_cache"))
    other = _profile(tmp_path / "other")  # the same kernel, written knowing nothing of inductor
    assert profiler.read(str(other)).fused == {}
    rows = mine.diff(str(other)).to_dataframe().set_index("name")
    assert rows.loc[NAME, "fused_nodes"] == ["input_2", "input_3"]


def test_a_graphframe_has_the_fused_columns(fused_profile):
    pytest.importorskip("hatchet")
    frame = profiler.read(str(fused_profile)).to_graphframe().dataframe
    assert list(frame.loc[frame["name"] == NAME, "fused_aten"]) == [["aten.native_layer_norm", "aten.gelu"]]


def test_the_viewer_prints_the_fusion_only_when_asked(fused_profile, capsys):
    plain = run_viewer(capsys, fused_profile)
    assert "fuses" not in plain
    shown = run_viewer(capsys, fused_profile, "--fused")
    line = next(line for line in shown.splitlines() if NAME in line)
    assert line.endswith(f"{NAME}  [fuses aten.native_layer_norm, aten.gelu; nodes input_2, input_3]")


def test_a_kernel_name_two_graphs_fuse_differently_gets_both_and_says_so(tmp_path, monkeypatch, capsys):
    other = tmp_path / "other.wrapper.txt"
    other.write_text(FORWARD.read_text().replace("triton_per_fused__softmax_exp_sub_sum_2", "twin"))
    _codecache(monkeypatch, _wrapper(FORWARD, NAME, NAME), _wrapper(other, "twin", NAME))
    facts = registry.kernel_facts()[NAME]
    assert facts["fused_variants"] == 2
    assert facts["fused_aten"] == ["aten.native_layer_norm", "aten.gelu", "aten.sub", "aten.exp",
                                   "aten._softmax", "aten.sum"]
    line = next(line for line in run_viewer(capsys, _profile(tmp_path), "--fused").splitlines() if NAME in line)
    assert line.endswith("; 2 fusions share this name]")


def test_names_with_control_characters_are_escaped_in_the_terminal_and_the_report(tmp_path, monkeypatch, capsys):
    hostile = tmp_path / "hostile.wrapper.txt"
    hostile.write_text(FORWARD.read_text().replace("[input_2, input_3]", "[</script>\x1b[2J, input_3]"))
    _codecache(monkeypatch, _wrapper(hostile, NAME, NAME))
    path = _profile(tmp_path)
    shown = run_viewer(capsys, path, "--fused")
    assert "\x1b" not in shown and "nodes </script>\\x1b[2J, input_3" in shown
    report = tmp_path / "report.html"
    run_viewer(capsys, path, "--html", report)
    html = report.read_text()
    assert "</script>\x1b" not in html and "\\u003c/script\\u003e\\u001b[2J" in html
    assert '"fused":{"' + NAME + '":{"fused_aten":["aten.native_layer_norm","aten.gelu"]' in html


def test_a_registry_that_fails_costs_the_table_not_the_profile(tmp_path, monkeypatch):
    _codecache(monkeypatch, _wrapper(FORWARD, NAME, NAME))
    monkeypatch.setattr(registry, "_wrapper_modules", lambda: 1 / 0)
    with pytest.warns(UserWarning, match="what inductor's kernels fuse could not be read"):
        path = _profile(tmp_path)
    root, _ = json.loads(path.read_text())
    assert "inductor_kernels" not in root and root["children"][0]["frame"]["name"] == "step"
