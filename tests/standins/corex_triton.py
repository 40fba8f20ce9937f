"""A stand-in Triton target for Iluvatar CoreX on the CPU, shaped after FlagTree's CoreX backend
(third_party/iluvatar/backend/compiler.py and driver.py of its Triton 3.6 port):

* StandinCorexCompiler: stages ttir, ttgir, llir, asm, cubin (no ptx); "llir" prints the kernel
  as ``define iluvatar_kernel void @add_kernel(...)`` with the profile scratch pointer last;
  add_stages calls ``knobs.runtime.add_stages_inspection_hook(self, stages, options, language,
  capability)`` as CoreX's does; "cubin" takes the LLVM IR (CoreX drops the asm stage's text) and
  can be told to reject text it does not take (a toolchain refusing an instruction);
* StandinCorexDriver: target ("corex", 71, warp size 64) and a launcher that asks Triton's profile
  allocator for the kernel's profile scratch pointer when its metadata asks for some, as CoreX's
  launcher does; the "kernel" it runs is given by the test (it writes what the stamps would).

``install(monkeypatch, driver_cls)`` registers the target and makes its driver the active one.
"""
import re

from support.triton_needs import skip_without_compiler_hooks

# The test module importing this one is skipped: its launcher and stages need Triton 3.6's hooks.
skip_without_compiler_hooks(module_level=True)

from triton.backends import Backend  # noqa: E402
from triton.backends.compiler import BaseBackend, GPUTarget  # noqa: E402
from triton.runtime import _allocation  # noqa: E402

LLIR = """; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"
target triple = "bi-iluvatar-ilurt"

define iluvatar_kernel void @add_kernel(ptr addrspace(1) %0, ptr addrspace(1) %1, i32 %2, ptr addrspace(1) %3, ptr addrspace(1) nofree readnone captures(none) %4) #0 {
  %6 = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %7 = icmp slt i32 %6, %2
  br i1 %7, label %8, label %11

8:
  %9 = getelementptr float, ptr addrspace(1) %0, i32 %6
  %10 = load float, ptr addrspace(1) %9, align 4
  store float %10, ptr addrspace(1) %1, align 4
  ret void

11:
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() #1

attributes #0 = { nounwind }
attributes #1 = { nounwind readnone }
"""

REJECTED = []  # substrings the stand-in toolchain refuses in the "cubin" stage's input


class StandinCorexCompiler(BaseBackend):
    @staticmethod
    def supports_target(target):
        return target.backend in ("corex", "cuda") and target.warp_size == 64

    def __init__(self, target):
        super().__init__(target)
        self.binary_ext = "cubin"

    def hash(self):
        return "standin-corex"

    def parse_options(self, options):
        return dict(options)

    def load_dialects(self, context):
        pass

    def get_module_map(self):
        return {}

    def make_cubin(self, src, metadata):
        names = re.findall(r"define iluvatar_kernel void @([a-zA-Z_][a-zA-Z0-9_]*)", src)
        assert len(names) == 1, "the cubin stage takes the llir stage's LLVM IR"
        for word in REJECTED:
            if word in src:
                raise RuntimeError(f"stand-in CoreX toolchain: unsupported instruction {word!r}")
        metadata["name"] = names[0]
        return b"standin-cubin:" + src.encode()

    def add_stages(self, stages, options, language):
        stages["ttir"] = lambda src, metadata: src
        stages["ttgir"] = lambda src, metadata: src
        stages["llir"] = lambda src, metadata: LLIR
        stages["asm"] = lambda src, metadata: "; assembly output is not available for 'ivcore20'\n"
        stages["cubin"] = self.make_cubin
        from triton import knobs

        if knobs.runtime.add_stages_inspection_hook is not None:
            knobs.runtime.add_stages_inspection_hook(self, stages, options, language, 71)


def compile_kernel(compiler, language=None):
    """Runs the stages as CoreX's Triton does (the asm stage's text is not passed on): the
    metadata and each stage's output."""
    stages, metadata, outputs = {}, {}, {}
    compiler.add_stages(stages, {}, language)
    module = "ttir"
    for name, stage in stages.items():
        out = stage(module, metadata)
        outputs[name] = out
        if name != "asm":
            module = out
    return metadata, outputs


class StandinCorexLauncher:
    def __init__(self, metadata, kernel):
        self.metadata = metadata
        self.kernel = kernel  # (profile scratch pointer, grid) -> None: what the device would run

    def __call__(self, grid, stream):
        size = self.metadata.get("profile_scratch_size", 0)
        scratch = None
        if size > 0:
            count = grid[0] * grid[1] * grid[2]
            scratch = _allocation._profile_allocator.get()(count * size, self.metadata["profile_scratch_align"],
                                                          stream)
        self.kernel(int(scratch or 0), grid)


class StandinCorexDriver:
    launcher_cls = StandinCorexLauncher
    compiler_cls = StandinCorexCompiler

    @staticmethod
    def is_active():
        return False  # never picked by Triton's own driver discovery

    def get_current_target(self):
        return GPUTarget("corex", 71, 64)

    def get_current_device(self):
        return 0

    def get_active_torch_device(self):
        return None


def install(monkeypatch, driver_cls=StandinCorexDriver):
    """The stand-in target registered as Triton's "iluvatar" backend and its driver active, with
    Triton's interpreter off, as on a device (monkeypatch undoes all three)."""
    import triton.backends
    from triton.runtime import driver

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setitem(triton.backends.backends, "iluvatar", Backend(compiler=driver_cls.compiler_cls,
                                                                      driver=driver_cls))
    REJECTED.clear()
    monkeypatch.setattr(driver, "_active", driver_cls())  # what driver.set_active() sets
    return driver
