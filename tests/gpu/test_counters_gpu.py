"""Hardware counters on the H200: nvidia backend, mode "metrics=...".

- a copy kernel of known size: DRAM bytes read and written within 5% of the bytes it must move;
- kernel replay does not change results: in-place kernels under a multi-pass metric set give the
  same outputs as without counters;
- an unknown metric is a clear error that says how to list the valid ones;
- list_metrics() knows the metrics the README names;
- derived metrics (occupancy, bandwidth, its use) are present and plausible.
"""
import json

import pytest
import torch
import triton
import triton.language as tl

import flagtree.profiler as profiler
from trace_checks import assert_kernels_follow_launches

BYTES_READ, BYTES_WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
COPY_ELEMENTS = 64 * 1024 * 1024  # float32: 256 MiB read, 256 MiB written (far above the 60 MB L2)


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


@triton.jit
def scale_add_inplace(x, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    v = tl.load(x + offsets, mask=mask)
    tl.store(x + offsets, v * 1.5 + 1.0, mask=mask)  # replayed without restore, x would change more


def launch_copy(src, dst):
    copy_kernel[(triton.cdiv(src.numel(), 4096),)](src, dst, src.numel(), BLOCK=4096)


def launch_inplace(x):
    scale_add_inplace[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)


def kernel_node(root, name):
    stack = [root]
    while stack:
        node = stack.pop()
        if node["frame"].get("kind") == "kernel" and node["frame"]["name"] == name:
            return node
        stack.extend(node["children"])
    raise AssertionError(f"no kernel node {name}")


def load(base):
    with open(base + ".hatchet") as f:
        root, device_info = json.load(f)
    with open(base + ".meta.json") as f:
        meta = json.load(f)
    return root, device_info, meta


def test_copy_kernel_dram_bytes_within_5_percent(tmp_path):
    src = torch.rand(COPY_ELEMENTS, device="cuda")
    dst = torch.empty_like(src)
    launch_copy(src, dst)  # compile outside the session
    torch.cuda.synchronize()
    base = str(tmp_path / "copy")
    profiler.start(base, backend="nvidia", mode="metrics")
    for _ in range(3):
        launch_copy(src, dst)
    profiler.finalize()
    assert torch.equal(src, dst)
    root, device_info, meta = load(base)
    metrics = kernel_node(root, "copy_kernel")["metrics"]
    moved = 3 * COPY_ELEMENTS * 4
    print("copy kernel metrics:", {k: v for k, v in metrics.items()})
    assert metrics["count"] == 3
    assert metrics[BYTES_READ] == pytest.approx(moved, rel=0.05)
    assert metrics[BYTES_WRITE] == pytest.approx(moved, rel=0.05)
    # derived: plausible, not exact
    assert 0 < metrics["achieved_occupancy (%)"] <= 100
    assert 100 < metrics["dram_bandwidth (GB/s)"] < 6000
    assert 1 < metrics["dram_bandwidth_util (%)"] < 130
    print("counter stats:", {k: v for k, v in meta.items() if k.startswith("counter")})
    assert meta["counter_ranges"] == 3 and meta["counter_launches_without_range"] == 0
    assert meta["counter_ranges_dropped"] == 0 and meta["counter_range_name_mismatches"] == 0


def test_multi_pass_replay_keeps_results_identical(tmp_path):
    chip_metrics = {m["name"]: m for m in profiler.list_metrics(submetrics=True)}
    wanted = [BYTES_READ, BYTES_WRITE, "sm__throughput.avg.pct_of_peak_sustained_elapsed",
              "sm__warps_active.avg.pct_of_peak_sustained_active", "lts__t_bytes.sum",
              "sm__inst_executed.sum", "l1tex__t_bytes.sum", "smsp__inst_executed.sum",
              "dram__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sectors.sum"]
    wanted = [m for m in wanted if m.split(".")[0] in chip_metrics]
    torch.manual_seed(0)
    start = torch.rand(1 << 22, device="cuda")
    reference = start.clone()
    launch_inplace(reference)  # compile outside the session
    reference = start.clone()
    for _ in range(4):
        launch_inplace(reference)
    torch.cuda.synchronize()

    profiled = start.clone()
    base = str(tmp_path / "replay")
    profiler.start(base, backend="nvidia", mode="metrics=" + ",".join(wanted))
    for _ in range(4):
        launch_inplace(profiled)
    profiler.finalize()
    _, _, meta = load(base)
    passes = meta["counter_passes"]
    print("metric set", wanted, "passes", passes)
    assert passes >= 2, f"the metric set needs {passes} pass(es); the test wants a multi-pass set"
    assert torch.equal(profiled, reference)


def test_outputs_identical_with_and_without_counters_torch_ops(tmp_path):
    torch.manual_seed(1)
    a = torch.randn(512, 512, device="cuda")
    b = torch.randn(512, 512, device="cuda")

    def work():
        x = a.clone()
        x.add_(1.0).mul_(0.5)
        return (x @ b).relu_()

    expected = work()
    torch.cuda.synchronize()
    profiler.start(str(tmp_path / "ops"), backend="nvidia", mode="metrics")
    got = work()
    profiler.finalize()
    assert torch.equal(got, expected)


def test_unknown_metric_is_a_clear_error():
    with pytest.raises(ValueError) as error:
        profiler.start("unused", backend="nvidia", mode="metrics=dram__bytes_read.sum,not__a_metric.sum")
    message = str(error.value)
    assert "not__a_metric.sum" in message
    assert "list_metrics()" in message and "--list-metrics" in message
    # the failed start left nothing behind: a session starts afterwards
    profiler.finalize()


def test_list_metrics_knows_the_documented_metrics():
    names = {m["name"]: m for m in profiler.list_metrics(submetrics=True)}
    for base in ("dram__bytes_read", "dram__bytes_write", "sm__throughput", "sm__warps_active",
                 "gpu__time_duration"):
        assert base in names, base
    print("submetrics of dram__bytes_read:", names["dram__bytes_read"].get("submetrics", [])[:12])
    assert BYTES_READ in names["dram__bytes_read"]["submetrics"]


def test_trace_mode_kernel_events_carry_metrics(tmp_path):
    src = torch.rand(1 << 20, device="cuda")
    dst = torch.empty_like(src)
    launch_copy(src, dst)
    base = str(tmp_path / "trace")
    profiler.start(base, backend="nvidia", data="trace", mode=f"metrics={BYTES_READ}")
    launch_copy(src, dst)
    profiler.finalize()
    with open(base + ".chrome_trace") as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    kernel = next(e for e in events if e.get("name") == "copy_kernel" and e.get("ph") == "X")
    assert kernel["args"][BYTES_READ] > 0
    assert assert_kernels_follow_launches(events) == 1
