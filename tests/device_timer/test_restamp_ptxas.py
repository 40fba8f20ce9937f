"""A stamped copy of a kernel whose kept PTX is newer than Triton's own ptxas takes (inductor
compiles with torch's ptxas; a process loading its caches has Triton's): ptxas refuses the PTX's
version, and the copy is built by the ptxas that compiled it, found where inductor's is. On the
stand-in target, whose binary stage refuses the PTX as Triton's ptxas does unless Triton's ptxas
variable names the newer one."""
import os

import pytest
from standins import compiled_kernels
from test_launch_sight import _kernel, _launch, _meta, _tree, device  # noqa: F401 (device: a fixture)

import flagtree.profiler as profiler
from flagtree.profiler.triton_glue import ptxas_choice


@pytest.fixture
def newer_ptxas(tmp_path, monkeypatch):
    """A CUDA toolkit in the test's folder whose ptxas alone takes the kernels' PTX version."""
    ptxas = tmp_path / "cuda" / "bin" / "ptxas"
    ptxas.parent.mkdir(parents=True)
    ptxas.write_text("#!/bin/sh\n")
    ptxas.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    monkeypatch.setattr(ptxas_choice, "_chosen", [None])
    seen = []
    real = compiled_kernels.StandinCompiler.make_cubin

    def make_cubin(self, src, metadata):
        seen.append(os.environ.get("TRITON_PTXAS_PATH"))
        if os.environ.get("TRITON_PTXAS_PATH") != str(ptxas):
            raise RuntimeError("PTXAS error: Internal Triton PTX codegen error\n`ptxas` stderr:\nptxas x.ptx, "
                               "line 5; fatal   : Unsupported .version 9.0; current version is '8.7'")
        return real(self, src, metadata)

    monkeypatch.setattr(compiled_kernels.StandinCompiler, "make_cubin", make_cubin)
    return str(ptxas), seen


def test_a_kernel_newer_than_tritons_ptxas_is_stamped_by_the_ptxas_that_takes_it(tmp_path, device, newer_ptxas):
    path, seen = newer_ptxas
    first, second = _kernel(tmp_path / "a"), _kernel(tmp_path / "b", name="other_kernel")
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    _launch(first, 2)
    _launch(second, 1)
    profiler.finalize(sid)
    assert _meta(tmp_path)["device_timer_kernels_stamped_at_first_launch"] == 2
    assert _meta(tmp_path)["device_timer_launches_not_timed"] == 0 and device.stamped_runs() == 3
    assert seen == [None, path, path]  # refused by Triton's, built by the newer; the next kernel goes to it first
    assert "TRITON_PTXAS_PATH" not in os.environ and "TRITON_PTXAS_BLACKWELL_PATH" not in os.environ


def test_a_ptxas_refusal_no_candidate_takes_is_counted_with_the_refusal(tmp_path, device, newer_ptxas, monkeypatch):
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nowhere"))
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode="events=off")
    _launch(_kernel(tmp_path), 2)
    with pytest.warns(RuntimeWarning, match="2 launches"):
        profiler.finalize(sid)
    counted = _meta(tmp_path)["device_timer_not_timed_kernels"]["add_kernel"]
    assert counted["launches"] == 2 and "Unsupported .version 9.0" in counted["reason"]
    assert ("add_kernel",) not in _tree(tmp_path)
