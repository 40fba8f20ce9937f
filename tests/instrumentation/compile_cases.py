"""Compiles small kernels with Triton's real compiler for an sm_90 target (no GPU needed), inside
and outside the instrumentation compiler hook, and prints what came out as JSON. Run as a
subprocess without TRITON_INTERPRET (the CPU test session runs with the interpreter on)."""
import json
import sys
import warnings

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

import flagtree.profiler.language as pl
from flagtree.profiler.kernel_scopes import compiler_hook
from flagtree.profiler.kernel_scopes.kernel_info import kernel_info
from flagtree.profiler.kernel_scopes.options import parse_mode

TARGET = GPUTarget("cuda", 90, 32)
SIGNATURE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}


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


@triton.jit
def nested(x, y, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    with pl.scope("outer"):
        a = tl.load(x + offsets)
        with pl.scope("inner"):
            a = a * 2.0
        tl.store(out + offsets, a)


def compile_triton(fn, mode=None):
    options = {}
    if mode is not None:
        opts = parse_mode(mode)
        compiler_hook.install(opts, arch=90)
        options["instrumentation_mode"] = triton.knobs.compilation.instrumentation_mode
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel = triton.compile(triton.compiler.ASTSource(fn, SIGNATURE, {"BLOCK": 1024}), target=TARGET,
                                    options=options)
    finally:
        if mode is not None:
            compiler_hook.uninstall()
    return kernel, [str(w.message) for w in caught if "flagtree" in str(w.message)]


def compile_gluon(mode=None):
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource

    @gluon.jit
    def gluon_copy(x, out, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
        with pl.scope("copy"):
            gl.store(out + offsets, gl.load(x + offsets))

    options = {}
    if mode is not None:
        compiler_hook.install(parse_mode(mode), arch=90)
        options["instrumentation_mode"] = triton.knobs.compilation.instrumentation_mode
    try:
        return triton.compile(GluonASTSource(gluon_copy, {"x": "*fp32", "out": "*fp32"}, {"BLOCK": 128}),
                              target=TARGET, options=options)
    finally:
        if mode is not None:
            compiler_hook.uninstall()


def describe(kernel, mode, warned=()):
    info = kernel_info(kernel.name, kernel.metadata, kernel.asm, parse_mode(mode or ""))
    return {"hash": kernel.hash, "profile_scratch_size": kernel.metadata.profile_scratch_size,
            "num_warps": kernel.metadata.num_warps,
            "records": kernel.asm["ttgir"].count("proton.record"),
            "clock_reads": kernel.asm["ptx"].count("%clock"),
            "scope_names": {str(k): v for k, v in (info.scope_names if info else {}).items()},
            "scope_parents": {str(k): v for k, v in (info.scope_parents if info else {}).items()},
            "header_words": info.layout.header_words if info else None,
            "metadata_group": getattr(kernel, "metadata_group", {}), "name": kernel.name,
            "warnings": list(warned)}


def main():
    from triton.backends.nvidia.compiler import CUDABackend

    before = {"knob": triton.knobs.compilation.instrumentation_mode,
              "class_attribute": repr(vars(CUDABackend).get("instrumentation"))}
    cases = {}
    plain, _ = compile_triton(add_two_scopes)
    cases["plain"] = describe(plain, None)
    on, warned = compile_triton(add_two_scopes, "triton=on")
    cases["triton_on"] = describe(on, "triton=on", warned)
    off, warned = compile_triton(add_two_scopes, "triton=off")
    cases["triton_off"] = describe(off, "triton=off", warned)
    small, _ = compile_triton(add_two_scopes, "triton=on:buffer_size=256")
    cases["small_buffer"] = describe(small, "triton=on:buffer_size=256")
    nest, _ = compile_triton(nested, "triton=on")
    cases["nested"] = describe(nest, "triton=on")
    cases["plain_again"] = describe(compile_triton(add_two_scopes)[0], None)
    cases["gluon_on"] = describe(compile_gluon(""), "")
    cases["gluon_plain"] = describe(compile_gluon(None), None)
    after = {"knob": triton.knobs.compilation.instrumentation_mode,
             "class_attribute": repr(vars(CUDABackend).get("instrumentation"))}
    try:
        import triton._instrumentation as points

        after["registered_points"] = sorted(str(k) for k in getattr(points, "_callbacks", {}))
    except ImportError:
        after["registered_points"] = []
    json.dump({"before": before, "after": after, "route": compiler_hook.route(), "cases": cases}, sys.stdout)


if __name__ == "__main__":
    main()
