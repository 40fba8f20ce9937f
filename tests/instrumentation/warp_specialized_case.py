"""Compiles a warp-specialized Hopper matmul (TMA descriptors, tl.range(..., warp_specialize=True))
with kernel-side scopes, for sm_90 with Triton's real compiler (no GPU), inside the
instrumentation hook at the default mode triton=on, and prints what came out as JSON. Run as a
subprocess without TRITON_INTERPRET."""
import inspect
import json
import os
import re
import sys

import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(__file__))
import flagtree.profiler.language as pl  # noqa: E402
from compile_cases import TARGET, compile_triton, describe  # noqa: E402


@triton.jit
def ws_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    with pl.scope("mainloop"):
        for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=True, num_stages=3):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
    with pl.scope("epilogue"):
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


@triton.jit
def ws_loop_scope(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A scope entered and left inside the warp-specialized loop's body."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=True, num_stages=3):
        pl.enter_scope("loop")
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([pid_n * BN, k * BK])
        acc = tl.dot(a, b.T, acc)
        pl.exit_scope("loop")
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


def records_before_warp_specialize(ttgir):
    first = ttgir.find("ttg.warp_specialize(")
    return sum(1 for m in re.finditer(r"proton\.record", ttgir) if first < 0 or m.start() < first)


def gluon_case():
    """Gluon's explicit warp specialization, a scope in each partition (4 + 1 warps)."""
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource

    from flagtree.profiler.kernel_scopes import compiler_hook
    from flagtree.profiler.kernel_scopes.options import parse_mode

    @gluon.jit
    def default_partition(x, out, BLOCK: gl.constexpr):
        offsets = gl.arange(0, BLOCK, gl.BlockedLayout([1], [32], [4], [0]))
        with pl.scope("default_copy"):
            gl.store(out + offsets, gl.load(x + offsets))

    @gluon.jit
    def worker_partition(x, out, BLOCK: gl.constexpr):
        offsets = BLOCK + gl.arange(0, 32, gl.BlockedLayout([1], [32], [1], [0]))
        with pl.scope("worker_copy"):
            gl.store(out + offsets, gl.load(x + offsets))

    if inspect.signature(gl.warp_specialize).parameters["worker_num_regs"].default is inspect.Parameter.empty:
        @gluon.jit  # Triton 3.6: each worker's register count is required
        def gluon_ws(x, out, BLOCK: gl.constexpr):
            gl.warp_specialize([(default_partition, (x, out, BLOCK)), (worker_partition, (x, out, BLOCK))], [1], [24])
    else:
        @gluon.jit
        def gluon_ws(x, out, BLOCK: gl.constexpr):
            gl.warp_specialize([(default_partition, (x, out, BLOCK)), (worker_partition, (x, out, BLOCK))], [1])

    compiler_hook.install(parse_mode(""), arch=90)
    try:
        kernel = triton.compile(GluonASTSource(gluon_ws, {"x": "*fp32", "out": "*fp32"}, {"BLOCK": 128}),
                                target=TARGET,
                                options={"instrumentation_mode": triton.knobs.compilation.instrumentation_mode})
    finally:
        compiler_hook.uninstall()
    case = describe(kernel, "")
    case["records_before_warp_specialize"] = records_before_warp_specialize(kernel.asm["ttgir"])
    return case


def main():
    import compile_cases

    compile_cases.SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
                               "K": "i32"}
    original = triton.compiler.ASTSource

    def source(fn, signature, constexprs):  # the matmul's own block sizes
        return original(fn, signature, {"BM": 128, "BN": 128, "BK": 64})

    triton.compiler.ASTSource = source
    cases = {}
    try:
        for name, fn in (("triton", ws_matmul), ("loop_scope", ws_loop_scope)):
            kernel, warned = compile_triton(fn, "triton=on")
            case = describe(kernel, "triton=on", warned)
            ttgir = kernel.asm["ttgir"]
            case["warp_specialize_ops"] = ttgir.count("ttg.warp_specialize(")
            # Where the records sit: before the warp_specialize op, or inside one of its regions.
            case["records_before_warp_specialize"] = records_before_warp_specialize(ttgir)
            cases[name] = case
    finally:
        triton.compiler.ASTSource = original
    cases["gluon"] = gluon_case()
    json.dump(cases, sys.stdout)


if __name__ == "__main__":
    main()
