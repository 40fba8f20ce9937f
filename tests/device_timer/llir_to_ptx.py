"""Compiles the example add kernel with Triton's real compiler for sm_90 (no GPU needed), stamps
its LLVM IR with the NVVM LLVM IR stamper (warp size 32), lowers the stamped IR to PTX with
Triton's own LLVM and assembles it with Triton's ptxas: the stamped text is LLVM IR that LLVM
parses, verifies and compiles. Prints JSON. Run as a subprocess without TRITON_INTERPRET."""
import json
import os
import sys

import triton
from triton._C.libtriton import llvm
from triton.backends.compiler import GPUTarget

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
from triton_kernels import add_kernel  # noqa: E402

from compile_stamped import SIGNATURE, assembles  # noqa: E402  (this folder: the script's own)
from flagtree.profiler.backends.device_timer.llir_stamps import stamp_llir  # noqa: E402


def to_ptx(llir):
    llvm.init_targets()
    args = (llir, "nvptx64-nvidia-cuda", "sm_90a", "+ptx80", [], True, False)
    try:
        return llvm.translate_to_asm(*args)
    except TypeError:  # later Triton: canonicalize_gep
        return llvm.translate_to_asm(*args, False)


def main():
    kernel = triton.compile(triton.compiler.ASTSource(add_kernel, SIGNATURE, {"BLOCK": 1024}),
                            target=GPUTarget("cuda", 90, 32))
    llir = kernel.asm["llir"]
    ptx = to_ptx(stamp_llir(llir, 0xDEADBEEF, 1 << 20, 8, warp_size=32))
    ok, errors = assembles(ptx)
    print(json.dumps({"rets": llir.count("ret void"), "timer_reads": ptx.count("%globaltimer"),
                      "atomic_max": ptx.count(".global.max.u64"), "meta_store": "st.global.v4" in ptx,
                      "assembles": ok, "ptxas_errors": errors}))


if __name__ == "__main__":
    main()
