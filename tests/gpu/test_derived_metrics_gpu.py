"""The viewer's derived metrics over hook="triton" launch metadata, on the GPU: a Triton matmul
of known size reports flops16 and bytes; tflop16/s, gbyte/s and util printed by the viewer
must equal the values computed by hand from the profile's own time and the H200's peaks."""
import json

import pytest
import torch
import triton
import triton.language as tl

import flagtree.profiler as profiler
from flagtree.profiler.viewer.cli import main as viewer_main

M = N = K = 1024
LAUNCHES = 10


def matmul_metadata(grid, metadata, args):
    return {"flops16": 2.0 * M * N * K, "bytes": 2.0 * (M * K + K * N + M * N)}


@triton.jit(launch_metadata=matmul_metadata)
def matmul_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK + tl.arange(0, BLOCK)
    rn = pid_n * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, n, BLOCK):
        a = tl.load(a_ptr + rm[:, None] * n + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * n + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc.to(tl.float16))


def test_viewer_derived_metrics_match_hand_computation(tmp_path, capsys):
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    grid = (M // 64, N // 64)
    matmul_kernel[grid](a, b, c, M, BLOCK=64)  # compile outside the session
    torch.testing.assert_close(c.float(), (a.float() @ b.float()), atol=0.5, rtol=0.05)
    base = str(tmp_path / "mm")
    profiler.start(base, hook="triton")
    for _ in range(LAUNCHES):
        matmul_kernel[grid](a, b, c, M, BLOCK=64)
    profiler.finalize()

    with open(base + ".hatchet") as f:
        root, device_info = json.load(f)
    kernel = next(n for n in root["children"] if n["frame"]["name"] == "matmul_kernel")
    metrics = kernel["metrics"]
    assert metrics["count"] == LAUNCHES
    assert metrics["flops16"] == LAUNCHES * 2.0 * M * N * K
    seconds = metrics["time (ns)"] / 1e9
    device = device_info["CUDA"]["0"]
    tflops = metrics["flops16"] / seconds / 1e12
    gbytes = metrics["bytes"] / seconds / 1e9
    bandwidth = 2 * device["memory_clock_rate"] * 1e3 * device["bus_width"] / 8
    if device["arch"] != "90":
        pytest.skip(f"util's peak table is checked here for sm90 only, this is sm{device['arch']}")
    util = max(tflops / 989.4, metrics["bytes"] / seconds / bandwidth)

    assert viewer_main(["-m", "tflop16/s,gbyte/s,util", "--no-color", base + ".hatchet"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.rstrip().endswith("matmul_kernel"))
    shown = [float(v) for v in line.split()[:3]]
    assert shown[0] == pytest.approx(tflops, rel=2e-3)
    assert shown[1] == pytest.approx(gbytes, rel=2e-3)
    assert shown[2] == pytest.approx(util, abs=1e-3)  # printed with three decimals
