"""backend="instrumentation" end to end on the CPU: the real session flow, compiler hook, profile
allocator, pool and drains, with kernel metadata from Triton's real compiler; what a GPU would do
(run the kernel, CUPTI's records) is done by hand."""
import json
import types

import numpy as np
import pytest

import flagtree.profiler as profiler
from buffers import block_words, two_scopes
from flagtree.profiler import _native
from flagtree.profiler.backends import get_backend
from flagtree.profiler.kernel_scopes import layout as L
from flagtree.profiler.kernel_scopes.options import COMPILER_MODE_PREFIX
from flagtree.profiler.kernel_scopes.scopes import InstrumentationState, add_call_stacks
from support.profiles import find, load_tree

FUNCTION = 0x7F00_1234


def load_kernel(backend, compiled, case="triton_on"):
    kernel = compiled["cases"][case]
    backend._kernel_loaded(None, FUNCTION, kernel["name"], kernel["metadata_group"], kernel["hash"])
    return backend.registry[FUNCTION]


def launch(backend, info, correlation, blocks, load_cycles=100, store_cycles=40, start_ns=1_000_000):
    """One launch as Triton + the GPU + CUPTI make it: allocator, kernel writes, exit hook, record."""
    _native.testing.launch(correlation, False)
    size = blocks * info.layout.stride
    piece = backend.collector(size, 128, 0)
    words = np.concatenate([block_words(info.layout, 1024, b, b % 7,
                                        [two_scopes(10 * w, load_cycles, store_cycles) for w in range(info.layout.num_warps)],
                                        start_ns + b) for b in range(blocks)])
    target = backend.collector.pool.view(piece).numpy()
    target[:] = np.frombuffer(words.tobytes(), dtype=np.uint8)
    _native.testing.instrumentation_launch(correlation)
    backend._launch_exit(types.SimpleNamespace(data={"function": FUNCTION, "name": info.name}))
    _native.testing.record(correlation, info.name, 100 * correlation, 100 * correlation + 50, 0)


def test_tree_has_a_child_per_scope_with_cycles_and_counts(tmp_path, cpu_device, compiled):
    sid = profiler.start(str(tmp_path / "ins"), backend="instrumentation", mode="triton=on")
    backend = get_backend("instrumentation")
    info = load_kernel(backend, compiled)
    with profiler.scope("step"):
        for i in range(3):
            launch(backend, info, 5000 + i, blocks=4, load_cycles=100 + i)
    profiler.finalize(sid)
    root, _ = load_tree(tmp_path / "ins.hatchet")
    kernel = find(root, "step", "add_two_scopes")
    assert kernel["metrics"]["count"] == 3
    load, store = find(kernel, "load"), find(kernel, "store")
    assert load["frame"]["kind"] == "device_scope"
    warps = info.layout.num_warps
    assert load["metrics"]["count"] == 3 * 4 * warps  # launches x blocks x warps
    assert load["metrics"]["cycles"] == 4 * warps * (100 + 101 + 102)
    assert load["metrics"]["normalized_cycles"] == pytest.approx(101)  # per warp, averaged over launches
    assert store["metrics"]["cycles"] == 3 * 4 * warps * 40
    meta = json.loads((tmp_path / "ins.meta.json").read_text())
    assert meta["instrumentation_launches"] == 3 and meta["instrumentation_drains"] == 1
    assert meta["instrumentation_dropped_records"] == 0 and "unmatched_extras" not in meta


def test_full_pool_drains_and_oversize_launch_gets_its_own_buffer(tmp_path, cpu_device, compiled):
    profiler.start(str(tmp_path / "pool"), backend="instrumentation", mode="triton=on:pool_mb=1")
    backend = get_backend("instrumentation")
    info = load_kernel(backend, compiled)
    per_launch = (1 << 20) // info.layout.stride // 2 - 1  # two launches fit, the third drains
    for i in range(3):
        launch(backend, info, 6000 + i, blocks=per_launch)
    assert backend.collector.totals.drains == 1  # the pool filled once: one read-back, not one per launch
    launch(backend, info, 6010, blocks=(1 << 20) // info.layout.stride + 1)  # bigger than the pool
    assert backend.collector.pool.oversize == 1
    profiler.finalize()
    root, _ = load_tree(tmp_path / "pool.hatchet")
    load = find(root, "add_two_scopes", "load")
    assert load["metrics"]["count"] == (3 * per_launch + (1 << 20) // info.layout.stride + 1) * info.layout.num_warps


def test_trace_mode_writes_per_block_per_warp_timeline(tmp_path, cpu_device, compiled):
    profiler.start(str(tmp_path / "tr"), backend="instrumentation", mode="triton=on", data="trace")
    backend = get_backend("instrumentation")
    info = load_kernel(backend, compiled)
    with profiler.scope("step"):
        launch(backend, info, 7000, blocks=20, start_ns=5_000_000)
    # the records above are stamped near 0, far before their launches on the host's clock
    with pytest.warns(UserWarning, match="clock is off the host's"):
        profiler.finalize()
    meta = json.loads((tmp_path / "tr.meta.json").read_text())
    trace = json.loads((tmp_path / "tr.device_scopes.json").read_text())
    assert meta["device_scope_trace"].endswith("tr.device_scopes.json")
    assert meta["device_scope_trace_blocks_left_out"] == 4  # 16 blocks per launch are written
    events = trace["traceEvents"]
    # Proton's track names: a process per block, a thread per warp, inside our launch's name
    label = f"{info.name} (launch 7000)"
    assert {(e["pid"], e["tid"]) for e in events} == {
        (f"{label} block {b}", f"warp {w}") for b in range(16) for w in range(info.layout.num_warps)}
    first = [e for e in events if e["pid"] == f"{label} block 3" and e["tid"] == "warp 0"]
    assert [e["name"] for e in sorted(first, key=lambda e: e["ts"])] == ["load", "store"]
    # the block's globaltimer start, as microseconds since the trace's origin (its first block)
    assert trace["otherData"]["time_origin_ns"] == 5_000_000
    assert min(e["ts"] for e in first) == pytest.approx((5_000_003 - 5_000_000) / 1000.0)
    assert all(e["dur"] > 0 for e in events)
    # Proton's fields: cat is the kernel, args say where the interval ran
    assert {e["cat"] for e in events} == {info.name}
    assert first[0]["args"]["block"] == 3 and first[0]["args"]["warp"] == 0 and "sm" in first[0]["args"]
    # Proton's call_stack: the launch's host context from the root down, then the kernel
    assert all(e["args"]["call_stack"] == ["ROOT", "step", info.name] for e in events)


def test_nvidia_and_instrumentation_sessions_merge_into_time_and_cycles(tmp_path, cpu_device, compiled):
    from flagtree.profiler.viewer.profile_tree import load_profiles

    profiler.start(str(tmp_path / "time"), backend="nvidia")
    profiler.start(str(tmp_path / "cycles"), backend="instrumentation", mode="triton=on")
    backend = get_backend("instrumentation")
    info = load_kernel(backend, compiled)
    for i in range(2):
        launch(backend, info, 8000 + i, blocks=2)
    profiler.finalize()
    merged = load_profiles([str(tmp_path / "time.hatchet"), str(tmp_path / "cycles.hatchet")])
    kernel = merged.root.children["add_two_scopes"]
    assert kernel.metrics["count"] == 2  # the same two launches, counted once
    assert kernel.metrics["time (ns)"] == 2 * 50
    assert kernel.children["load"].metrics["cycles"] == 2 * 2 * info.layout.num_warps * 100


def test_second_session_must_use_the_same_options(tmp_path, cpu_device):
    profiler.start(str(tmp_path / "a"), backend="instrumentation", mode="triton=on")
    with pytest.raises(ValueError, match="same mode"):
        profiler.start(str(tmp_path / "b"), backend="instrumentation", mode="triton=on:buffer_size=512")


def test_hook_and_allocator_are_restored_after_the_last_session(tmp_path, cpu_device):
    import triton
    from triton.runtime import _allocation

    allocator_before = _allocation._profile_allocator.get()
    hooks_before = list(triton.knobs.runtime.launch_exit_hook.calls)
    sid = profiler.start(str(tmp_path / "r"), backend="instrumentation")
    assert triton.knobs.compilation.instrumentation_mode.startswith(COMPILER_MODE_PREFIX)
    profiler.finalize(sid)
    assert triton.knobs.compilation.instrumentation_mode == ""
    assert _allocation._profile_allocator.get() is allocator_before
    assert triton.knobs.runtime.launch_exit_hook.calls == hooks_before


def test_the_launch_exit_hook_goes_in_once_an_instrumented_kernel_is_known(tmp_path, cpu_device, compiled,
                                                                           monkeypatch):
    """The exit hook costs every launch a call: a session whose kernels carry no scopes has none."""
    import triton

    chain = triton.knobs.runtime.launch_exit_hook
    backend = get_backend("instrumentation")
    monkeypatch.setattr(backend.scopes, "registry", {})  # no kernel known from earlier tests
    sid = profiler.start(str(tmp_path / "a"), backend="instrumentation", mode="triton=on")
    assert backend.scopes.launch_exit not in chain.calls
    load_kernel(backend, compiled)
    assert backend.scopes.launch_exit in chain.calls
    profiler.finalize(sid)
    assert backend.scopes.launch_exit not in chain.calls
    # A later session: Triton's cache launches the kernel without loading it again.
    sid = profiler.start(str(tmp_path / "b"), backend="instrumentation", mode="triton=on")
    assert backend.scopes.launch_exit in chain.calls
    profiler.finalize(sid)
    assert backend.scopes.launch_exit not in chain.calls


def test_bad_mode_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="supported forms"):
        profiler.start(str(tmp_path / "x"), backend="instrumentation", mode="granularity=cta")


def test_call_stack_comes_from_the_launch_log_and_is_left_out_when_unknown():
    state = InstrumentationState(trace_events=[{"args": {}} for _ in range(5)])
    state.trace_launches = [(11, 0, 2), (12, 2, 3), (13, 3, 4), (0, 4, 5)]
    log = {"correlation": [11, 11, 12, 7], "name": ["k", "k", "k", "m"],
           "kind": ["kernel", "kernel", "kernel", "memcpy"],
           "path": [[("frame", "run.py:3@main"), ("kernel", "k")],  # a tree session: the kernel node
                    [("scope", "replay"), ("kernel", "k")],  # a later record of 11: not its launch
                    [("scope", "outer"), ("scope", "inner")],  # a trace session: the context node
                    []]}
    add_call_stacks(state, log)
    stacks = [e["args"].get("call_stack") for e in state.trace_events]
    assert stacks == [["ROOT", "run.py:3@main", "k"]] * 2 + [["ROOT", "outer", "inner", "k"], None, None]


def test_a_kernel_stamped_by_the_device_timer_gets_a_null_scratch_not_a_piece_of_the_pool(tmp_path, cpu_device):
    """Its stamps write planes of the ring far past the size it asks for."""
    from triton.runtime import _allocation

    sid = profiler.start(str(tmp_path / "s"), backend="instrumentation")
    collector = get_backend("instrumentation").scopes.collector
    allocate = _allocation._profile_allocator.get()
    assert allocate(16, _native.device_timer.device_timer_layout()["align_tag"], 0) == 0
    assert getattr(collector._pending, "piece", None) is None  # no piece taken
    assert allocate(4096, 128, 0) != 0  # an instrumented kernel's scratch, as before
    assert collector._pending.piece is not None
    collector._pending.piece = None  # no launch follows here
    profiler.finalize(sid)
