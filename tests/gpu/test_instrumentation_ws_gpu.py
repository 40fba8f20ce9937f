"""backend="instrumentation" on a warp-specialized Hopper matmul (TMA descriptors,
tl.range(..., warp_specialize=True)) on the real GPU: its kernel-side scopes are recorded (before
the per-kernel buffer sizing the kernel node had no device-scope children: the 12-warp block did
not fit the default buffer layout), a scope inside the loop's body too (the partitioner dropped
its records), and the result is still right."""
import os
import sys

import pytest

import flagtree.profiler as profiler
from support.profiles import find, load_tree

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "instrumentation"))
from warp_specialized_case import ws_loop_scope, ws_matmul  # noqa: E402  (the kernels the CPU compile test checks)

if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
    pytest.skip("needs a Hopper (sm_90+) GPU", allow_module_level=True)


def test_warp_specialized_matmul_scopes_are_recorded(tmp_path):
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    M = N = K = 512
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    profiler.start(str(tmp_path / "ws"), backend="instrumentation", mode="triton=on")
    for _ in range(3):
        ws_matmul[(M // 128, N // 128)](a, b, c, M, N, K, BM=128, BN=128, BK=64, num_warps=4)
    torch.cuda.synchronize()
    profiler.finalize()
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T), atol=0.5, rtol=0.05)
    root, _ = load_tree(tmp_path / "ws.hatchet")
    kernel = find(root, "ws_matmul")
    assert kernel is not None and kernel["metrics"]["count"] == 3
    scopes = {child["frame"]["name"]: child for child in kernel["children"]}
    assert {"mainloop", "epilogue"} <= set(scopes), sorted(scopes)
    for name in ("mainloop", "epilogue"):
        assert scopes[name]["metrics"]["count"] > 0 and scopes[name]["metrics"]["cycles"] > 0, scopes[name]


def test_a_scope_inside_the_warp_specialized_loop_is_recorded(tmp_path):
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    M = N = K = 512
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    profiler.start(str(tmp_path / "wsl"), backend="instrumentation", mode="triton=on")
    for _ in range(2):
        ws_loop_scope[(M // 128, N // 128)](a, b, c, M, N, K, BM=128, BN=128, BK=64, num_warps=4)
    torch.cuda.synchronize()
    profiler.finalize()
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T), atol=0.5, rtol=0.05)
    root, _ = load_tree(tmp_path / "wsl.hatchet")
    kernel = find(root, "ws_loop_scope")
    assert kernel is not None and kernel["metrics"]["count"] == 2
    scopes = {child["frame"]["name"]: child for child in kernel["children"]}
    assert set(scopes) == {"loop"}, sorted(scopes)
    assert scopes["loop"]["metrics"]["count"] > 0, scopes["loop"]
