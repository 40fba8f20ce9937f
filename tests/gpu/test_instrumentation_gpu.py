"""backend="instrumentation" on a real GPU. With $OUT set, the raw
profile buffer of one launch and its kernel facts are saved there (CPU-test fixture material)."""
import json
import os

import pytest

import flagtree.profiler as profiler
from support.profiles import find, load_tree

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import flagtree.profiler.language as pl  # noqa: E402
from support.instrumented_kernels import add_two_scopes, long_then_short  # noqa: E402  (shared with bench/ and dev/)

LONG, SHORT = 4000, 400
BLOCKS, BLOCK, WARPS = 32, 128, 4


@pytest.fixture(autouse=True)
def closed():
    yield
    profiler.finalize()


def run_long_short(launches):
    x = torch.randn(BLOCKS * BLOCK, device="cuda")
    out = torch.empty_like(x)
    for _ in range(launches):
        long_then_short[(BLOCKS,)](x, out, LONG=LONG, SHORT=SHORT, BLOCK=BLOCK, num_warps=WARPS)
    torch.cuda.synchronize()


def test_long_scope_has_proportionally_more_cycles_and_counts_match_warps(tmp_path):
    launches = 3
    profiler.start(str(tmp_path / "ls"), backend="instrumentation", mode="triton=on")
    run_long_short(launches)
    profiler.finalize()
    root, _ = load_tree(tmp_path / "ls.hatchet")
    kernel = find(root, "long_then_short")
    assert kernel is not None and kernel["metrics"]["count"] == launches
    long, short = find(kernel, "long"), find(kernel, "short")
    assert long["metrics"]["count"] == short["metrics"]["count"] == WARPS * BLOCKS * launches
    ratio = long["metrics"]["cycles"] / short["metrics"]["cycles"]
    assert 4 < ratio < 25, f"long/short cycles {ratio:.1f}, loop trip ratio {LONG / SHORT}"
    assert long["metrics"]["normalized_cycles"] > LONG  # at least a cycle per iteration, per warp
    meta = json.loads((tmp_path / "ls.meta.json").read_text())
    assert meta["instrumentation_dropped_records"] == 0 and meta["instrumentation_unknown_kernels"] == 0


def test_trace_orders_long_before_short_on_each_warp(tmp_path):
    profiler.start(str(tmp_path / "tr"), backend="instrumentation", mode="triton=on", data="trace")
    run_long_short(1)
    profiler.finalize()
    events = json.loads((tmp_path / "tr.device_scopes.json").read_text())["traceEvents"]
    by_warp = {}
    for event in events:
        by_warp.setdefault((event["pid"], event["tid"]), []).append(event)
    assert len(by_warp) == 16 * WARPS  # 16 blocks per launch are written
    assert {tid for _, tid in by_warp} == {f"warp {w}" for w in range(WARPS)}  # Proton's track names
    for track in by_warp.values():
        names = [e["name"] for e in sorted(track, key=lambda e: e["ts"])]
        assert names == ["long", "short"]
        long, short = sorted(track, key=lambda e: e["ts"])
        assert long["ts"] + long["dur"] <= short["ts"] + 1e-3 and long["dur"] > short["dur"]


def test_kernels_compiled_outside_a_session_are_untouched(tmp_path):
    n = 1 << 16
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    before = add_two_scopes[(n // 1024,)](x, x, out, n, BLOCK=1024)
    profiler.start(str(tmp_path / "inside"), backend="instrumentation", mode="triton=on")
    inside = add_two_scopes[(n // 1024,)](x, x, out, n, BLOCK=1024)
    profiler.finalize()
    after = add_two_scopes[(n // 1024,)](x, x, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    assert before.metadata.profile_scratch_size == 0 and after.metadata.profile_scratch_size == 0
    assert inside.metadata.profile_scratch_size > 0 and inside.hash != before.hash
    assert after.hash == before.hash
    assert torch.allclose(out, x + x)


def test_no_host_sync_per_launch(tmp_path):
    from flagtree.profiler.backends import get_backend

    n = 1 << 20
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    profiler.start(str(tmp_path / "nosync"), backend="instrumentation", mode="triton=on")
    collector = get_backend("instrumentation").collector
    for _ in range(50):
        add_two_scopes[(n // 1024,)](x, x, out, n, BLOCK=1024)
    assert collector.totals.drains == 0 and collector.totals.launches == 50  # read back only at the end
    profiler.finalize()


def test_nvidia_and_instrumentation_sessions_merge(tmp_path):
    from flagtree.profiler.viewer.profile_tree import load_profiles

    profiler.start(str(tmp_path / "time"), backend="nvidia")
    profiler.start(str(tmp_path / "cycles"), backend="instrumentation", mode="triton=on")
    run_long_short(2)
    profiler.finalize()
    assert find(load_tree(tmp_path / "time.hatchet")[0], "long_then_short")["metrics"]["count"] == 2
    merged = load_profiles([str(tmp_path / "time.hatchet"), str(tmp_path / "cycles.hatchet")])
    kernel = merged.root.children["long_then_short"]
    assert kernel.metrics["count"] == 2 and kernel.metrics["time (ns)"] > 0
    assert kernel.children["long"].metrics["cycles"] > kernel.children["short"].metrics["cycles"] > 0


def test_gluon_kernels_are_instrumented_without_opt_in(tmp_path):
    gluon = pytest.importorskip("triton.experimental.gluon")
    from triton.experimental.gluon import language as gl

    @gluon.jit
    def gluon_copy(x, out, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
        with pl.scope("copy"):
            gl.store(out + offsets, gl.load(x + offsets))

    x = torch.randn(8 * 128, device="cuda")
    out = torch.empty_like(x)
    profiler.start(str(tmp_path / "g"), backend="instrumentation")
    gluon_copy[(8,)](x, out, BLOCK=128, num_warps=4)
    profiler.finalize()
    assert torch.equal(out, x)
    copy = find(load_tree(tmp_path / "g.hatchet")[0], "gluon_copy", "copy")
    assert copy["metrics"]["count"] == 8 * 4


def test_a_real_buffer_decodes_and_is_saved_for_cpu_fixtures(tmp_path):
    """The raw buffer of one launch decodes to one entry per warp and scope; with $OUT set (the GPU
    round) it is also saved, and became tests/instrumentation/fixtures/add_8blocks.*."""
    from flagtree.profiler.backends import get_backend
    from flagtree.profiler.kernel_scopes import layout as L

    n = 8 * 1024
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    profiler.start(str(tmp_path / "fixture"), backend="instrumentation", mode="triton=on")
    backend = get_backend("instrumentation")
    kernel = add_two_scopes[(8,)](x, x, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    launch = backend.collector.launches[-1]
    raw = backend.collector.pool.view(launch.piece).cpu().numpy().tobytes()
    info = backend.registry[launch.function]
    profiler.finalize()
    records = L.parse_raw(raw, info.layout, 8)
    summary = L.summarize(records, info.layout)
    assert records.bad_blocks == 0 and records.dropped_records == 0 and records.unmatched_records == 0
    assert len(summary) == 2 and all(s["count"] == 8 * info.layout.num_warps for s in summary.values())
    out_dir = os.environ.get("OUT")
    if not out_dir:
        return
    import io
    import tarfile

    facts = json.dumps({"layout": info.layout.__dict__, "scope_names": info.scope_names, "blocks": 8,
                        "triton": triton.__version__,
                        "profile_scratch_size": kernel.metadata.profile_scratch_size}).encode()
    with tarfile.open(os.path.join(out_dir, "instrumentation_fixture.tar.gz"), "w:gz") as archive:
        for name, data in (("add_8blocks.raw", raw), ("add_8blocks.json", facts)):
            entry = tarfile.TarInfo(name)
            entry.size = len(data)
            archive.addfile(entry, io.BytesIO(data))
