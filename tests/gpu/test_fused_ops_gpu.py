"""What torch.compile's kernels fuse, on their tree nodes: the MLP training step of
bench/third_party_workloads.py under torch.compile, default mode and reduce-overhead (CUDA
graphs), profiled by the nvidia backend (CUPTI names the kernels) and by device_timer (its launch
paths see inductor's autotuners): every kernel node named triton_* carries the ATen operators it
fuses. A model compiled in the test (empty caches of its own), after flagtree.profiler was imported,
also carries the model's source lines."""
import os
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import flagtree.profiler as profiler  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))
from third_party_workloads import BUILDERS  # noqa: E402

STEPS = 3


def _triton_rows(base):
    frame = profiler.read(base + ".hatchet").to_dataframe()
    rows = frame[(frame["kind"] == "kernel") & frame["name"].str.startswith("triton_")]
    assert len(rows), "no inductor kernel was recorded"
    return rows


def _profile(step, backend, base, warm):
    for _ in range(warm):
        step()
    sid = profiler.start(base, backend=backend)
    for _ in range(STEPS):
        step()
    profiler.finalize(sid)
    return _triton_rows(base)


@pytest.mark.parametrize("backend", ["nvidia", "device_timer"])
@pytest.mark.parametrize("workload", ["compile", "compile_ro"])
def test_every_inductor_kernel_node_names_the_aten_ops_it_fuses(workload, backend, tmp_path):
    # reduce-overhead captures its CUDA graph in the session (launch paths see the capture only)
    warm = 0 if workload == "compile_ro" else 2
    with warnings.catch_warnings(record=True):
        rows = _profile(BUILDERS[workload](), backend, str(tmp_path / "run"), warm)
    missing = [name for name, aten in zip(rows["name"], rows["fused_aten"]) if not aten]
    assert missing == []
    assert all(all(op.startswith(("aten.", "prims.")) for op in aten) for aten in rows["fused_aten"])
    assert any("aten.native_layer_norm" in aten or "aten.gelu" in aten for aten in rows["fused_aten"])


def test_a_model_compiled_while_the_profiler_watches_inductor_carries_its_source_lines(tmp_path, monkeypatch):
    # Empty caches of the test's own: inductor writes each kernel in this process, its wrappers stay on disk.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False):
        step = BUILDERS["compile"]()
        step()
        rows = _profile(step, "nvidia", str(tmp_path / "run"), 1)
    assert "source_lines" in rows, f"no kernel has source lines; columns {sorted(rows)}"
    lines = [line for found in rows["source_lines"] if isinstance(found, list) for line in found]
    assert any("third_party_workloads.py:" in line and " in forward" in line for line in lines), lines
