"""Probe of backend="instrumentation"'s route on a real GPU, step by step (each step prints what it
did and survives the others' failures).

    python3 dev/probe_instrumentation.py            # writes under $OUT (or ./out)

Writes (packed into $OUT/probe_instrumentation.tar.gz): probe_<case>.raw (profile buffer bytes of the first blocks), probe_<case>.json (kernel
metadata, layout, parsed summary), probe_<case>.ttgir / .ptx, probe_summary.json. The .raw/.json
pairs are meant to become CPU-test fixtures (tests/instrumentation/fixtures).
"""
import json
import os
import sys
import time
import traceback

# Files go to OUT/probe_files and end up in ONE archive, OUT/probe_instrumentation.tar.gz (the
# device tool brings back few files per call).
OUT_ROOT = os.environ.get("OUT", "out")
OUT = os.path.join(OUT_ROOT, "probe_files")
RESULTS = {}
MAX_DUMP_BLOCKS = 64


def step(name):
    def wrap(fn):
        def run(*args, **kwargs):
            label = name.format(*args)
            print(f"\n=== {label}", flush=True)
            started = time.perf_counter()
            try:
                value = fn(*args, **kwargs)
                RESULTS[label] = {"ok": True, "seconds": round(time.perf_counter() - started, 3)}
                return value
            except Exception as error:  # report and go on with the next step
                traceback.print_exc()
                RESULTS[label] = {"ok": False, "error": f"{type(error).__name__}: {error}"}
                return None
        return run
    return wrap


@step("environment")
def environment():
    import torch
    import triton

    from flagtree.profiler.kernel_scopes import compiler_hook

    info = {"python": sys.version.split()[0], "torch": torch.__version__, "triton": triton.__version__,
            "gpu": torch.cuda.get_device_name(0), "capability": torch.cuda.get_device_capability(0),
            "route": compiler_hook.route(), "instrumentation_mode_knob": triton.knobs.compilation.instrumentation_mode}
    from triton._C.libtriton import proton

    info["proton_functions"] = sorted(n for n in dir(proton) if not n.startswith("_"))
    props = triton.runtime.driver.active.utils.get_device_properties(0)
    info["device_properties"] = {k: v for k, v in props.items() if isinstance(v, (int, str))}
    print(json.dumps(info, indent=1, default=str))
    return info


class RecordingAllocator:
    """Triton's profile allocator for the probe: a fresh zeroed buffer per launch, kept."""

    def __init__(self):
        self.buffers = []

    def __call__(self, size, alignment, stream):
        import torch

        buffer = torch.zeros(size + alignment, dtype=torch.uint8, device="cuda")
        offset = (-buffer.data_ptr()) % alignment
        view = buffer[offset:offset + size]
        self.buffers.append((size, alignment, view))
        print(f"  profile allocator: size={size} alignment={alignment} stream={stream}")
        return view


def kernels():
    import triton
    import triton.language as tl

    import flagtree.profiler.language as pl

    @triton.jit
    def add_two_scopes(x, y, out, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        with pl.scope("load"):
            a = tl.load(x + offsets, mask=mask)
            b = tl.load(y + offsets, mask=mask)
        pl.enter_scope("store")
        tl.store(out + offsets, a + b, mask=mask)
        pl.exit_scope("store")

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from support.instrumented_kernels import long_then_short  # one copy, shared with the GPU tests

    return add_two_scopes, long_then_short


def dump_case(case, kernel, allocator, grid_blocks, options):
    import numpy as np

    from flagtree.profiler.kernel_scopes import layout as L
    from flagtree.profiler.kernel_scopes.kernel_info import kernel_info

    info = kernel_info(kernel.name, kernel.metadata, kernel.asm, options)
    meta = {k: v for k, v in kernel.metadata._asdict().items() if isinstance(v, (int, str, float, bool))}
    print(f"  metadata: profile_scratch_size={meta.get('profile_scratch_size')} "
          f"align={meta.get('profile_scratch_align')} num_warps={meta.get('num_warps')} shared={meta.get('shared')}")
    for ext in ("ttgir", "ptx"):
        with open(os.path.join(OUT, f"probe_{case}.{ext}"), "w") as handle:
            handle.write(kernel.asm.get(ext, ""))
    record = {"case": case, "metadata": meta, "grid_blocks": grid_blocks, "options": options.canonical()}
    if info is None:
        print("  kernel is NOT instrumented (profile_scratch_size 0)")
        record["instrumented"] = False
    else:
        size, alignment, view = allocator.buffers[-1]
        raw = view.cpu().numpy().tobytes()
        keep = min(grid_blocks, MAX_DUMP_BLOCKS)
        with open(os.path.join(OUT, f"probe_{case}.raw"), "wb") as handle:
            handle.write(raw[:keep * info.layout.stride])
        words = np.frombuffer(raw[:info.layout.stride], dtype="<u4")
        print(f"  block 0 first 24 words: {[hex(w) for w in words[:24]]}")
        records = L.parse_raw(raw, info.layout, grid_blocks)
        summary = L.summarize(records, info.layout)
        named = {info.scope_names.get(k, str(k)): v for k, v in summary.items()}
        print(f"  layout: {info.layout}")
        print(f"  scopes: {info.scope_names} parents: {info.scope_parents}")
        print(f"  parsed: {json.dumps(named)}")
        print(f"  dropped={records.dropped_records} unmatched={records.unmatched_records} "
              f"bad_blocks={records.bad_blocks} of {records.num_blocks}")
        record.update({"instrumented": True, "layout": info.layout.__dict__, "scope_names": info.scope_names,
                       "scope_parents": info.scope_parents, "summary": named, "dumped_blocks": keep,
                       "dropped": records.dropped_records, "unmatched": records.unmatched_records,
                       "bad_blocks": records.bad_blocks, "allocation": [size, alignment]})
    with open(os.path.join(OUT, f"probe_{case}.json"), "w") as handle:
        json.dump(record, handle, indent=1, default=str)
    return record


@step("instrumented add, mode {0!r}, case {1}")
def instrumented_add(mode, case, n):
    import torch
    import triton
    from triton.runtime._allocation import set_profile_allocator

    from flagtree.profiler.kernel_scopes import compiler_hook
    from flagtree.profiler.kernel_scopes.options import parse_mode

    options = parse_mode(mode.replace(":granularity=cta", ""))
    if "granularity=cta" in mode:  # not accepted by parse_mode (fails on 3.9): does 3.6 differ?
        import dataclasses

        options = dataclasses.replace(options, granularity="cta")
    add_two_scopes, _ = kernels()
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    allocator = RecordingAllocator()
    set_profile_allocator(allocator)
    compiler_hook.install(options)
    print(f"  knob instrumentation_mode={triton.knobs.compilation.instrumentation_mode!r}")
    try:
        grid = (triton.cdiv(n, 1024),)
        kernel = add_two_scopes[grid](x, y, out, n, BLOCK=1024)
        torch.cuda.synchronize()
        assert torch.allclose(out, x + y), "instrumented kernel computed a wrong result"
        print("  result correct")
    finally:
        compiler_hook.uninstall()
        set_profile_allocator(None)
    return dump_case(case, kernel, allocator, grid[0], options)


@step("long and short loops")
def long_short():
    import torch
    from triton.runtime._allocation import set_profile_allocator

    from flagtree.profiler.kernel_scopes import compiler_hook
    from flagtree.profiler.kernel_scopes.options import parse_mode

    options = parse_mode("triton=on")
    _, long_then_short = kernels()
    x = torch.randn(64 * 128, device="cuda")
    out = torch.empty_like(x)
    allocator = RecordingAllocator()
    set_profile_allocator(allocator)
    compiler_hook.install(options)
    try:
        kernel = long_then_short[(64,)](x, out, LONG=4000, SHORT=400, BLOCK=128)
        torch.cuda.synchronize()
    finally:
        compiler_hook.uninstall()
        set_profile_allocator(None)
    return dump_case("long_short", kernel, allocator, 64, options)


@step("plain compile after uninstall")
def plain_after():
    import torch
    import triton

    add_two_scopes, _ = kernels()
    n = 1 << 16
    x = torch.randn(n, device="cuda")
    kernel = add_two_scopes[(triton.cdiv(n, 1024),)](x, x, torch.empty_like(x), n, BLOCK=1024)
    torch.cuda.synchronize()
    print(f"  profile_scratch_size={kernel.metadata.profile_scratch_size} (expected 0)")
    assert kernel.metadata.profile_scratch_size == 0


@step("gluon kernel")
def gluon_kernel():
    import torch
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.runtime._allocation import set_profile_allocator

    import flagtree.profiler.language as pl
    from flagtree.profiler.kernel_scopes import compiler_hook
    from flagtree.profiler.kernel_scopes.options import parse_mode

    @gluon.jit
    def gluon_copy(x, out, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
        with pl.scope("copy"):
            gl.store(out + offsets, gl.load(x + offsets))

    options = parse_mode("")
    x = torch.randn(8 * 128, device="cuda")
    out = torch.empty_like(x)
    allocator = RecordingAllocator()
    set_profile_allocator(allocator)
    compiler_hook.install(options)
    try:
        kernel = gluon_copy[(8,)](x, out, BLOCK=128, num_warps=4)
        torch.cuda.synchronize()
        assert torch.equal(out, x)
    finally:
        compiler_hook.uninstall()
        set_profile_allocator(None)
    return dump_case("gluon", kernel, allocator, 8, options)


@step("session API end to end")
def session_api():
    import torch
    import triton

    import flagtree.profiler as profiler

    add_two_scopes, _ = kernels()
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    path = os.path.join(OUT, "probe_session")
    profiler.start(path, backend="instrumentation", mode="triton=on")
    for _ in range(5):
        add_two_scopes[(triton.cdiv(n, 1024),)](x, x, out, n, BLOCK=1024)
    profiler.finalize()
    for suffix in (".hatchet", ".meta.json"):
        if os.path.exists(path + suffix):
            print(f"  wrote {path + suffix} ({os.path.getsize(path + suffix)} bytes)")
    with open(path + ".meta.json") as handle:
        print("  meta:", handle.read()[:1500])


@step("per-kernel timing (16M add, events)")
def timing():
    import torch
    import triton
    from triton.runtime._allocation import set_profile_allocator

    from flagtree.profiler.kernel_scopes import compiler_hook
    from flagtree.profiler.kernel_scopes.options import parse_mode

    add_two_scopes, _ = kernels()
    n = 1 << 24
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    scratch = {}

    def allocator(size, alignment, stream):
        if size not in scratch:
            scratch[size] = torch.empty(size, dtype=torch.uint8, device="cuda")
        return scratch[size]

    def time_it(label):
        for _ in range(3):
            add_two_scopes[grid](x, y, out, n, BLOCK=1024)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            add_two_scopes[grid](x, y, out, n, BLOCK=1024)
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / 50
        print(f"  {label}: {ms * 1000:.1f} us per launch")
        return ms

    plain = time_it("plain")
    set_profile_allocator(allocator)
    results = {"plain_us": plain * 1000}
    for mode in ("", "buffer_size=0", "buffer_type=global"):
        compiler_hook.install(parse_mode(mode + ":triton=on"))
        try:
            results[mode or "default"] = time_it(f"instrumented {mode or 'default'}") / plain
        finally:
            compiler_hook.uninstall()
    set_profile_allocator(None)
    print(f"  ratios: {results}")
    return results


def main():
    os.makedirs(OUT, exist_ok=True)
    environment()
    instrumented_add("triton=on", "add_warp", 1 << 20)
    instrumented_add("triton=on:buffer_size=0", "add_triton_default_buffer", 1 << 20)
    instrumented_add("triton=on:granularity=cta", "add_cta", 1 << 20)
    instrumented_add("triton=on:buffer_type=global", "add_global", 1 << 20)
    instrumented_add("triton=on:buffer_size=64", "add_small_buffer", 1 << 16)
    instrumented_add("", "add_triton_off", 1 << 16)
    long_short()
    plain_after()
    gluon_kernel()
    session_api()
    timing()
    with open(os.path.join(OUT, "probe_summary.json"), "w") as handle:
        json.dump(RESULTS, handle, indent=1, default=str)
    import shutil
    import tarfile

    with tarfile.open(os.path.join(OUT_ROOT, "probe_instrumentation.tar.gz"), "w:gz") as archive:
        archive.add(OUT, arcname="probe_files")
    shutil.rmtree(OUT, ignore_errors=True)
    print("\n=== summary")
    for name, result in RESULTS.items():
        print(f"  {'OK  ' if result['ok'] else 'FAIL'} {name}: {result.get('error', '')}")


if __name__ == "__main__":
    main()
