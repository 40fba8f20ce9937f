"""Compiles the example add kernel with Triton's real compiler for sm_90 (no GPU needed), inside
the device_timer compiler hook, assembles the PTX with Triton's ptxas, and prints what came out
as JSON. Run as a subprocess without TRITON_INTERPRET (the CPU test session runs with it on)."""
import json
import os
import subprocess
import sys
import tempfile

import triton
from triton.backends.compiler import GPUTarget

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
from triton_kernels import add_kernel  # noqa: E402

from flagtree.profiler import _native  # noqa: E402
from flagtree.profiler.backends.device_timer import compiler_hook  # noqa: E402

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def compile_add(stamped):
    options = {}
    if stamped:
        compiler_hook.install(_native, 1 << 20, 8, 64)
        options["instrumentation_mode"] = triton.knobs.compilation.instrumentation_mode
    try:
        return triton.compile(triton.compiler.ASTSource(add_kernel, SIGNATURE, {"BLOCK": 1024}),
                              target=GPUTarget("cuda", 90, 32), options=options)
    finally:
        if stamped:
            compiler_hook.uninstall()


def assembles(ptx):
    from triton.backends.nvidia.compiler import get_ptxas

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        done = subprocess.run([get_ptxas(90).path, "-arch=sm_90a", path, "-o", path + ".o"],
                              capture_output=True, text=True)
        return done.returncode == 0, done.stderr


def main():
    mode_before = triton.knobs.compilation.instrumentation_mode
    hook_before = triton.knobs.runtime.add_stages_inspection_hook
    plain = compile_add(False)
    stamped = compile_add(True)
    ok, errors = assembles(stamped.asm["ptx"])
    print(json.dumps({
        "plain_scratch": [plain.metadata.profile_scratch_size, plain.metadata.profile_scratch_align],
        "stamped_scratch": [stamped.metadata.profile_scratch_size, stamped.metadata.profile_scratch_align],
        "align_tag": _native.device_timer.device_timer_layout()["align_tag"],
        "plain_has_stamps": "device_timer" in plain.asm["ptx"],
        "entry_stamps": stamped.asm["ptx"].count("device_timer: entry stamp"),
        "exit_stamps": stamped.asm["ptx"].count("device_timer: exit stamp"),
        "rets": stamped.asm["ptx"].count("ret;"),
        "graph_tickets": stamped.asm["ptx"].count("atom.global.add.u64"),
        "graph_exits": stamped.asm["ptx"].count("red.global.add.u64"),
        "kernel_id": str(_native.device_timer.device_timer_kernel_id(stamped.metadata.name)),
        "assembles": ok, "ptxas_errors": errors,
        "same_hash": plain.hash == stamped.hash,
        "mode_restored": triton.knobs.compilation.instrumentation_mode == mode_before,
        "hook_restored": triton.knobs.runtime.add_stages_inspection_hook is hook_before,
        "stamped_count": compiler_hook.stats["stamped"],
    }))


if __name__ == "__main__":
    main()
