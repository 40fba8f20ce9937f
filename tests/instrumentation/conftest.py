import json
import os
import subprocess
import sys

import pytest

from support.triton_needs import skip_without_compiler_hooks

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """Kernels compiled by Triton's real compiler for sm_90, inside and outside the hook
    (compile_cases.py in a subprocess: this test process runs Triton's interpreter)."""
    skip_without_compiler_hooks()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.pop("FLAGTREE_PROFILER_INSTRUMENT_TRITON", None)
    env["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton_cache"))  # compile for real, every run
    done = subprocess.run([sys.executable, os.path.join(HERE, "compile_cases.py")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture
def cpu_device(monkeypatch):
    """backend="instrumentation" on this CPU machine: CUPTI's part (kernel records) is driven by
    hand through _native.testing.launch/record, profile buffers live in host memory."""
    skip_without_compiler_hooks()
    import torch

    from flagtree.profiler.backends import instrumentation
    from flagtree.profiler.backends.nvidia import backend as nvidia

    monkeypatch.setattr(nvidia.NvidiaBackend, "acquire", lambda self, mode: None)
    monkeypatch.setattr(nvidia.NvidiaBackend, "release", lambda self: None)
    monkeypatch.setattr(nvidia.NvidiaBackend, "flush", lambda self: None)
    monkeypatch.setattr(nvidia.NvidiaBackend, "dropped_records", lambda self: 0)
    monkeypatch.setattr(nvidia.NvidiaBackend, "device_info", lambda self: {})
    monkeypatch.setattr(nvidia.NvidiaBackend, "describe", lambda self: {"backend": "nvidia"})
    monkeypatch.setattr(instrumentation, "new_device_buffer", lambda n: torch.zeros(n, dtype=torch.uint8))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    yield
    import flagtree.profiler as profiler

    profiler.finalize()
