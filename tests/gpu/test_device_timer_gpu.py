"""backend="device_timer" on a GPU: every Triton launch timed by its own stamps, no CUPTI loaded,
the ring's wrap and backpressure with real copies, the clock against host scopes, beside
torch.profiler, and CUDA graph replays timed each under the replay and the capture context."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

import flagtree.profiler as profiler  # noqa: E402
from flagtree.profiler import _native  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
from trace_checks import assert_kernels_follow_launches  # noqa: E402
from triton_kernels import add_kernel  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "src")
# The device timer's launch time may be taken after the launch call returned (hook="triton"), by
# when the grid may have started: a kernel may start up to that much before it.
LAUNCH_SLACK_US = 1000.0


def _tensors(n):
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    return x, y, torch.empty_like(x)


def _launch(x, y, out, times=1):
    for _ in range(times):
        add_kernel[(triton_cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)


def triton_cdiv(a, b):
    return -(-a // b)


def _flat(path):
    root = json.load(open(path))[0]
    flat, stack = {}, [(root, ())]
    while stack:
        node, prefix = stack.pop()
        for c in node["children"]:
            key = prefix + (c["frame"]["name"],)
            flat[key] = c["metrics"]
            stack.append((c, key))
    return flat


def test_every_launch_is_timed_with_correct_results_and_metadata(tmp_path):
    x, y, out = _tensors(1 << 20)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    with profiler.scope("step"):
        _launch(x, y, out, times=37)
    torch.cuda.synchronize()
    profiler.finalize(sid)
    assert torch.allclose(out, x + y)  # the stamps leave the kernel's work alone
    node = _flat(tmp_path / "p.hatchet")[("step", "add_kernel")]
    assert node["count"] == 37 and node["time (ns)"] > 37 * 1000
    meta = json.load(open(tmp_path / "p.meta.json"))
    assert meta["time_source"] == "device_timer" and meta["device_timer_records"] == 37
    assert meta["device_timer_untimed"] == 0 and meta["backend"] == "device_timer"
    assert "Triton kernels" in meta["device_timer_covers"]


def test_no_cupti_is_loaded_by_a_session(tmp_path):
    script = textwrap.dedent(f"""
        import torch, flagtree.profiler as p
        from flagtree.profiler import _native
        import sys; sys.path.insert(0, {os.path.dirname(SRC) + '/examples'!r})
        from triton_kernels import add_kernel
        before = _native.core.loaded_library_path("libcupti.so")
        x = torch.rand(4096, device="cuda"); out = torch.empty_like(x)
        s = p.start({str(tmp_path / 'c')!r}, backend="device_timer")
        add_kernel[(4,)](x, x, out, 4096, BLOCK=1024)
        p.finalize(s)
        print(before is None, _native.core.loaded_library_path("libcupti.so") is None)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    before_none, after_none = done.stdout.split()[-2:]
    assert after_none == before_none  # the session loaded no libcupti


def test_a_small_ring_wraps_and_waits_without_losing_launches(tmp_path):
    x, y, out = _tensors(1024)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", mode="slots=64:batch=16")
    with profiler.scope("loop"):
        _launch(x, y, out, times=1000)
    profiler.finalize(sid)
    assert _flat(tmp_path / "p.hatchet")[("loop", "add_kernel")]["count"] == 1000
    meta = json.load(open(tmp_path / "p.meta.json"))
    assert meta["device_timer_records"] == 1000 and meta["device_timer_readbacks"] >= 1000 // 64


def test_python_context_and_threads_see_their_launches(tmp_path):
    import threading

    x, y, out = _tensors(1024)
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer", context="python")

    def worker():
        _launch(x, y, out, times=5)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()
    profiler.finalize(sid)
    flat = _flat(tmp_path / "p.hatchet")
    total = sum(m["count"] for k, m in flat.items() if k[-1] == "add_kernel")
    assert total == 15
    assert any(any("worker" in part for part in k) for k in flat if k[-1] == "add_kernel")


def test_kernels_lie_inside_the_host_scope_that_launched_and_waited_for_them(tmp_path):
    x, y, out = _tensors(1 << 22)
    sid = profiler.start(str(tmp_path / "t"), backend="device_timer", data="trace")
    for i in range(5):
        with profiler.scope(f"step{i}"):
            _launch(x, y, out, times=3)
            torch.cuda.synchronize()
    profiler.finalize(sid)
    events = json.load(open(tmp_path / "t.chrome_trace"))["traceEvents"]
    scopes = {e["name"]: e for e in events if e.get("cat") == "scope"}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert len(kernels) == 15
    assert assert_kernels_follow_launches(events, slack_us=LAUNCH_SLACK_US) == 15
    meta = json.load(open(tmp_path / "t.meta.json"))
    slack_us = (abs(meta["device_timer_clock_uncertainty_ns"]) + abs(meta["device_timer_clock_drift_ns"])) / 1e3 + 1
    for k in kernels:
        s = scopes[k["args"]["context"]]
        assert s["ts"] - slack_us <= k["ts"] and k["ts"] + k["dur"] <= s["ts"] + s["dur"] + slack_us
    assert abs(meta["device_timer_clock_drift_ns"]) < 100_000


def test_times_agree_with_cupti_for_the_same_launches(tmp_path):
    """Both routes open at once see the same launches, each session only its own route's: each
    launch's duration and its distance from the first launch agree with CUPTI's records of it
    (the stamps start at the first instruction, ~1 us after CUPTI's grid start). Where each
    route puts the launches on the host's clock is checked against host scopes, not against
    CUPTI: its records, mapped through cuptiGetTimestamp, were seen 16-31 ms off in some
    processes on the H200 (docs/reference/device-timer.md)."""
    x, y, out = _tensors(1 << 24)
    _launch(x, y, out)
    torch.cuda.synchronize()
    timer = profiler.start(str(tmp_path / "d"), backend="device_timer", data="trace")
    cupti = profiler.start(str(tmp_path / "c"), backend="nvidia", data="trace")
    for _ in range(10):
        _launch(x, y, out)
        torch.cuda.synchronize()
    profiler.finalize(cupti)
    profiler.finalize(timer)

    def kernels(name):
        events = json.load(open(tmp_path / f"{name}.chrome_trace"))["traceEvents"]
        if name == "d":
            assert_kernels_follow_launches(events, slack_us=LAUNCH_SLACK_US)
        else:
            assert_kernels_follow_launches(events)
        return sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])

    ours, theirs = kernels("d"), kernels("c")
    assert len(ours) == len(theirs) == 10
    assert all(e["args"]["correlation"] >= 0xC0000000 for e in ours)
    for a, b in zip(ours, theirs):
        assert abs(a["dur"] - b["dur"]) < 0.03 * b["dur"] + 1.5
        assert abs((a["ts"] - ours[0]["ts"]) - (b["ts"] - theirs[0]["ts"])) < 2.0


def test_beside_torch_profiler_both_see_the_kernels(tmp_path):
    """In a fresh process (no CUPTI client before): torch.profiler holds CUPTI, ours runs inside."""
    script = textwrap.dedent(f"""
        import json, sys, torch, flagtree.profiler as p
        from torch.profiler import ProfilerActivity, profile
        sys.path.insert(0, {os.path.dirname(SRC) + '/examples'!r})
        from triton_kernels import add_kernel
        x = torch.rand(1 << 20, device="cuda"); out = torch.empty_like(x)
        add_kernel[(1024,)](x, x, out, 1 << 20, BLOCK=1024)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            s = p.start({str(tmp_path / 'p')!r}, backend="device_timer")
            for _ in range(8):
                add_kernel[(1024,)](x, x, out, 1 << 20, BLOCK=1024)
            torch.cuda.synchronize()
            p.finalize(s)
        print(json.dumps(len([e for e in prof.events() if "add_kernel" in e.name])))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.split()[-1]) >= 8  # torch.profiler's CUPTI saw the launches
    assert _flat(tmp_path / "p.hatchet")[("add_kernel",)]["count"] == 8


def test_graph_replays_are_timed_each_under_the_replay_and_the_capture_context(tmp_path):
    """Two launches captured into a graph, replayed 100 times through torch.cuda.CUDAGraph.replay:
    200 records, each under the replay's scope -> <captured_at> -> the capture's scope, on the
    stream replay() ran on, inside the replay loop's host window, with the graph's results right;
    the metadata counts the replays, all matched to their replay calls."""
    x, y, out = _tensors(1 << 16)
    mid = torch.empty_like(x)
    trace = profiler.start(str(tmp_path / "g"), backend="device_timer", data="trace")
    tree = profiler.start(str(tmp_path / "t"), backend="device_timer")
    _launch(x, y, mid)  # the stamped binary compiles here, outside the capture
    torch.cuda.synchronize()
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    with profiler.scope("capture"):
        with torch.cuda.graph(graph, stream=stream):
            _launch(x, y, mid)
            _launch(mid, y, out)
    mid.zero_()
    out.zero_()
    with profiler.scope("replays"):
        for _ in range(100):
            graph.replay()
        torch.cuda.synchronize()
    profiler.finalize(tree)
    profiler.finalize(trace)
    assert torch.allclose(out, x + 2 * y)  # the tagged stamps leave the graph's work alone
    flat = _flat(tmp_path / "t.hatchet")
    assert flat[("replays", "<captured_at>", "capture", "add_kernel")]["count"] == 200
    # no kernel under the capture context alone (its scope node is there, empty)
    assert not any(k[0] == "capture" and k[-1] == "add_kernel" for k in flat), sorted(flat)
    events = json.load(open(tmp_path / "g.chrome_trace"))["traceEvents"]
    assert_kernels_follow_launches(events, slack_us=LAUNCH_SLACK_US)
    window = next(e for e in events if e.get("cat") == "scope" and e["name"] == "replays")
    kernels = [e for e in events if e.get("cat") == "kernel"]
    replays = [e for e in kernels if 0xA0000000 <= e["args"]["correlation"] < 0xB0000000]  # replay launches
    assert len(replays) == 200 and {e["args"]["context"] for e in replays} == {"replays/<captured_at>/capture"}
    eager = [e for e in kernels if e not in replays]  # the first launch, on the default stream as replay()
    assert len(eager) == 1 and {e["tid"] for e in replays} == {eager[0]["tid"]}
    meta = json.load(open(tmp_path / "g.meta.json"))
    slack_us = (abs(meta["device_timer_clock_uncertainty_ns"]) + abs(meta["device_timer_clock_drift_ns"])) / 1e3 + 1
    for e in replays:
        assert e["dur"] > 0
        assert window["ts"] - slack_us <= e["ts"] and e["ts"] + e["dur"] <= window["ts"] + window["dur"] + slack_us
    launches = {}
    for e in replays:
        launches.setdefault(e["args"]["correlation"], []).append(e)
    assert sorted(len(v) for v in launches.values()) == [2] * 100  # each replay: its two kernels
    ordered = sorted(replays, key=lambda e: e["ts"])  # one exec, one stream: nothing overlaps
    assert all(a["ts"] + a["dur"] <= b["ts"] + slack_us for a, b in zip(ordered, ordered[1:]))
    assert meta["device_timer_graph_nodes"] == 2 and meta["device_timer_graph_replays_timed"] == 200
    assert meta["device_timer_graph_replays_matched"] == 200 and meta["device_timer_graph_replays_unmatched"] == 0
    assert meta["device_timer_graph_replays_lost"] == 0 and meta["device_timer_captured_untimed"] == 0
    assert meta["device_timer_records"] == 201 and meta["device_timer_untimed"] == 0


SCOPED_SCRIPT = '''
import json, sys
import torch, triton, triton.language as tl
import flagtree.profiler as p
import flagtree.profiler.language as pl
from flagtree.profiler import _native
sys.path.insert(0, EXAMPLES)
from triton_kernels import add_kernel


@triton.jit
def scaled_sum(x, out, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    pl.enter_scope("loop")
    for i in range(STEPS):
        acc += tl.load(x + offsets, mask=mask) * (i + 1)
    pl.exit_scope("loop")
    tl.store(out + offsets, acc, mask=mask)


n = 1 << 16
x = torch.rand(n, device="cuda"); out = torch.empty_like(x); plain = torch.empty_like(x)
before = _native.core.loaded_library_path("libcupti.so")  # torch may map one at import
s = p.start(NAME, backend="device_timer")
with p.scope("step"):
    for _ in range(5):
        scaled_sum[(n // 1024,)](x, out, n, BLOCK=1024, STEPS=4)
    for _ in range(3):
        add_kernel[(n // 1024,)](x, x, plain, n, BLOCK=1024)
torch.cuda.synchronize()
p.finalize(s)
s = p.start(NAME + "2", backend="device_timer")  # the kernels come from Triton's cache now, not loaded again
with p.scope("again"):
    for _ in range(2):
        scaled_sum[(n // 1024,)](x, out, n, BLOCK=1024, STEPS=4)
torch.cuda.synchronize()
p.finalize(s)
after = _native.core.loaded_library_path("libcupti.so")
print(json.dumps({"cupti_loaded_by_session": after != before, "scoped_right": bool(torch.allclose(out, x * 10)),
                  "plain_right": bool(torch.allclose(plain, x + x))}))
'''


def test_kernel_side_scopes_on_top_of_device_times_without_cupti(tmp_path):
    script = tmp_path / "scoped.py"  # a file: Triton reads a kernel's source
    script.write_text(f"EXAMPLES = {os.path.dirname(SRC) + '/examples'!r}\nNAME = {str(tmp_path / 's')!r}\n"
                      + SCOPED_SCRIPT)
    # A cache of its own: the kernels are compiled in the session (device_timer_kernels_scoped
    # counts compiles, and a machine's cache may hold them from an earlier run).
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts == {"cupti_loaded_by_session": False, "scoped_right": True, "plain_right": True}
    flat = _flat(tmp_path / "s.hatchet")
    scoped, loop = flat[("step", "scaled_sum")], flat[("step", "scaled_sum", "loop")]
    assert scoped["count"] == 5 and scoped["time (ns)"] > 0  # from the blocks' header stamps
    assert loop["count"] > 0 and loop["cycles"] > 0 and loop["normalized_cycles"] > 0
    stamped = flat[("step", "add_kernel")]  # no scopes: the PTX stamps, in the same session
    assert stamped["count"] == 3 and stamped["time (ns)"] > 0
    meta = json.load(open(tmp_path / "s.meta.json"))
    assert meta["device_timer_scopes"] == "on" and meta["time_source"] == "device_timer"
    assert meta["device_timer_scoped_launches_timed"] == 5 and meta["device_timer_scoped_launches_untimed"] == 0
    assert meta["device_timer_records"] == 3 and meta["device_timer_untimed"] == 0
    assert meta["device_timer_kernels_scoped"] >= 1 and "scaled_sum" not in meta["device_timer_kernels_not_stamped"]
    assert meta["instrumentation_launches"] == 5 and meta["instrumentation_bad_blocks"] == 0
    # A later session knows the scoped kernel it did not see load.
    again = _flat(tmp_path / "s2.hatchet")[("again", "scaled_sum")]
    assert again["count"] == 2 and again["time (ns)"] > 0
    meta = json.load(open(tmp_path / "s2.meta.json"))
    assert meta["device_timer_scoped_launches_timed"] == 2 and meta["device_timer_scoped_launches_untimed"] == 0


def _unstampable(monkeypatch):
    """Kernels compiled without stamps in the session (the compiler hook left out) and refused at
    their first launch, as a kernel whose stage text is gone is: every launch is event-timed."""
    from flagtree.profiler.backends.device_timer import compiler_hook, untimed

    monkeypatch.setattr(compiler_hook, "install", lambda *args, **kwargs: None)
    monkeypatch.setattr(compiler_hook, "uninstall", lambda: None)
    monkeypatch.setattr(untimed.FirstSightStamps, "decide",
                        lambda self, kernel, launcher, kind: (launcher, "refused by the test"))


def test_a_kernel_that_cannot_be_stamped_is_timed_by_events_on_its_stream(tmp_path, monkeypatch):
    x, y, out = _tensors(1 << 24)
    _launch(x, y, out, times=3)  # compiled (unstamped) and warm before both sessions
    stamped = profiler.start(str(tmp_path / "s"), backend="device_timer")
    _launch(x, y, out, times=20)
    torch.cuda.synchronize()
    profiler.finalize(stamped)
    _unstampable(monkeypatch)
    torch.cuda._sleep(50_000_000)  # a busy stream: the launches queue behind it, as in a step
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sid = profiler.start(str(tmp_path / "e"), backend="device_timer", data="trace", mode="events=on")
    start.record()
    with profiler.scope("step"):
        _launch(x, y, out, times=20)
    end.record()
    torch.cuda.synchronize()
    profiler.finalize(sid)
    assert torch.allclose(out, x + y)
    meta = json.load(open(tmp_path / "e.meta.json"))
    assert meta["device_timer_event_timed_kernels"]["add_kernel"]["launches"] == 20
    assert meta["device_timer_event_records"] == 20 and meta["device_timer_launches_not_timed"] == 0
    events = json.load(open(tmp_path / "e.chrome_trace"))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert len(kernels) == 20 and all(k["args"]["context"].endswith("step") for k in kernels)
    assert assert_kernels_follow_launches(events, slack_us=LAUNCH_SLACK_US) == 20
    # The pairs lie inside torch's pair around all of them, and read about the stamps' times.
    event_mean = sum(k["dur"] for k in kernels) / 20
    stamped_mean = _flat(tmp_path / "s.hatchet")[("add_kernel",)]["time (ns)"] / 20 / 1e3
    assert sum(k["dur"] for k in kernels) <= start.elapsed_time(end) * 1e3 + 1
    assert 0.9 * stamped_mean <= event_mean <= 1.2 * stamped_mean + 5, (event_mean, stamped_mean)


def test_launches_on_a_capturing_stream_stay_counted_by_name(tmp_path, monkeypatch):
    x, y, out = _tensors(1 << 20)
    _launch(x, y, out)
    _unstampable(monkeypatch)
    sid = profiler.start(str(tmp_path / "g"), backend="device_timer", mode="events=on")
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        _launch(x, y, out, times=2)
    graph.replay()
    torch.cuda.synchronize()
    with pytest.warns(RuntimeWarning, match="got no device time"):
        profiler.finalize(sid)
    assert torch.allclose(out, x + y)
    meta = json.load(open(tmp_path / "g.meta.json"))
    assert meta["device_timer_not_timed_kernels"]["add_kernel"]["launches"] == 2
    assert meta["device_timer_event_captured_untimed"] == 2
    # The capture took no descriptor, so its replay is one of a graph the ring never saw: counted
    # as such and, with events on, timed as a whole on its stream.
    assert meta["device_timer_graph_replays_unseen"] == 1 and meta["device_timer_event_records"] == 1


def test_a_stamped_kernel_given_another_tools_profile_scratch_writes_nothing_into_it(tmp_path):
    """A library keeps a kernel compiled with our stamps (as FlagGems' LibEntry or inductor do), and
    after the session another tool (Proton's instrumentation, say) replaces Triton's profile
    allocator: the kernel's launches ask that allocator with our tag and get its memory, which the
    stamps must leave alone (they write only through the ring's marked pointers)."""
    from flagtree.profiler.triton_glue import kernels as triton_kernels

    x, y, out = _tensors(1 << 20)
    grid = (triton_cdiv(x.numel(), 1024), 1, 1)  # CompiledKernel[grid] takes all three
    sid = profiler.start(str(tmp_path / "p"), backend="device_timer")
    kept = add_kernel[grid](x, y, out, x.numel(), BLOCK=1024)  # the CompiledKernel, with the stamps
    torch.cuda.synchronize()
    plane = _native.device_timer.device_timer_plane_bytes()
    profiler.finalize(sid)
    layout = _native.device_timer.device_timer_layout()
    assert kept.metadata.profile_scratch_align == layout["align_tag"]
    # As large as everything the stamps could reach from a slot pointer: plane 0 and every lane.
    canary = torch.full(((layout["lanes"] + 2) * plane // 4,), 0x5A5A5A5A, dtype=torch.int32, device="cuda")
    asked = []

    def other_tool(size, alignment, stream):
        asked.append(alignment)
        return canary.data_ptr()

    undo = triton_kernels.set_profile_allocator(other_tool)
    try:
        out.zero_()
        for _ in range(5):
            kept[grid](x, y, out, x.numel(), 1024)
        torch.cuda.synchronize()
    finally:
        undo()
    assert torch.allclose(out, x + y)
    assert asked == [layout["align_tag"]] * 5
    assert bool((canary == 0x5A5A5A5A).all()), "the stamps wrote into another tool's profile scratch"
