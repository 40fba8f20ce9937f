"""Test-wide setup. CPU tests run real Triton kernels in Triton's interpreter mode, which must
be switched on before triton is first imported; the GPU round (tests/gpu on the GPU machine)
sets FLAGTREE_GPU_TESTS=1 to keep real launches."""
import os
import sys

if os.environ.get("FLAGTREE_GPU_TESTS") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")

sys.path.insert(0, os.path.dirname(__file__))
