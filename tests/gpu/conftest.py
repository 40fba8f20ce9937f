"""GPU tests: they run on the GPU machine (FLAGTREE_GPU_TESTS=1, real CUDA) and skip cleanly
anywhere else."""
import os

import pytest


def gpu_ready():
    if os.environ.get("TRITON_INTERPRET") == "1":
        return False, "Triton interpreter mode is on (CPU run)"
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if not torch.cuda.is_available():
        return False, "no CUDA GPU"
    return True, ""


def pytest_collection_modifyitems(config, items):
    ready, why = gpu_ready()
    if ready:
        return
    skip = pytest.mark.skip(reason=f"GPU test: {why}")
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(skip)
