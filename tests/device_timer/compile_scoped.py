"""Compiles a kernel with kernel-side scopes and a plain one with Triton's real compiler for sm_90
(no GPU needed), with both compiler hooks of a device_timer session installed (the scopes' proton
passes, then the stamps beside them), and prints what came out as JSON. Run as a subprocess
without TRITON_INTERPRET (the CPU test session runs with it on)."""
import json
import os
import sys

import triton
from triton.backends.compiler import GPUTarget

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "instrumentation"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples"))
from compile_cases import SIGNATURE, add_two_scopes  # noqa: E402
from triton_kernels import add_kernel  # noqa: E402

from flagtree.profiler import _native  # noqa: E402
from flagtree.profiler.backends.device_timer import compiler_hook as stamps  # noqa: E402
from flagtree.profiler.backends.device_timer.scopes import scope_options  # noqa: E402
from flagtree.profiler.kernel_scopes import compiler_hook as scopes  # noqa: E402
from flagtree.profiler.kernel_scopes.kernel_info import kernel_info  # noqa: E402
from flagtree.profiler.kernel_scopes.options import options_from_compiler_mode  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)


def compile_both():
    scopes.install(scope_options(), arch=90)
    scopes_mode = triton.knobs.compilation.instrumentation_mode
    stamps.install(_native, 1 << 20, 32, 64, beside=scopes_mode)
    mode = triton.knobs.compilation.instrumentation_mode
    try:
        compiled = {}
        for name, fn, signature in (("scoped", add_two_scopes, SIGNATURE),
                                    ("plain", add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                                           "n": "i32"})):
            compiled[name] = triton.compile(triton.compiler.ASTSource(fn, signature, {"BLOCK": 1024}), target=TARGET,
                                            options={"instrumentation_mode": mode})
    finally:
        stamps.uninstall()
        mode_after_stamps = triton.knobs.compilation.instrumentation_mode
        scopes.uninstall()
    return compiled, scopes_mode, mode, mode_after_stamps


def main():
    compiled, scopes_mode, mode, mode_after_stamps = compile_both()
    scoped, plain = compiled["scoped"], compiled["plain"]
    info = kernel_info(scoped.metadata.name, scoped.metadata._asdict(), scoped.asm,
                       options_from_compiler_mode(scoped.metadata.instrumentation_mode))
    print(json.dumps({
        "scopes_mode": scopes_mode, "mode": mode, "mode_after_stamps": mode_after_stamps,
        "mode_restored": triton.knobs.compilation.instrumentation_mode == "",
        "align_tag": _native.device_timer.device_timer_layout()["align_tag"],
        "scoped_scratch": [scoped.metadata.profile_scratch_size, scoped.metadata.profile_scratch_align],
        "scoped_stamps": scoped.asm["ptx"].count("device_timer: entry stamp"),
        "scoped_header_words": info.layout.header_words,
        "scoped_scope_names": sorted(info.scope_names.values()),
        "plain_scratch": [plain.metadata.profile_scratch_size, plain.metadata.profile_scratch_align],
        "plain_stamps": plain.asm["ptx"].count("device_timer: entry stamp"),
        "stats": {k: v for k, v in stamps.stats.items() if k != "not_stamped_kernels"},
    }))


if __name__ == "__main__":
    main()
