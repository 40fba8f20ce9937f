"""Which code a target's kernels are stamped in: one stamper per code format.

A stamper names the compiler stage whose output it edits (the compiler hook wraps that stage),
finds the kernel's name in that text and returns the text with the stamps (or raises
NotStampable). A target without a stamper is not stampable: the device_timer route does not run
there (route.py says why). The slot protocol (ring layout, lanes, plane stride) is the same for
every stamper, so the ring and its readback stay target-independent.
"""
from dataclasses import dataclass

from . import llir_stamps, ptx_stamps
from .ptx_stamps import NotStampable


@dataclass(frozen=True)
class PtxStamper:
    """NVIDIA: the "ptx" stage's text (ptx_stamps.py)."""
    name: str = "ptx"
    stage: str = "ptx"
    code_format: str = "PTX"
    times_graph_replays: bool = True  # tagged slot pointers of graph-captured launches

    def kernel_name(self, text):
        return ptx_stamps.kernel_entry(text)[0]

    def stamp(self, text, kernel_id, plane_bytes, lanes, records):
        return ptx_stamps.stamp_ptx(text, kernel_id, plane_bytes, lanes, records)


@dataclass(frozen=True)
class NvvmLlirStamper:
    """Targets whose "llir" stage prints NVVM-flavoured LLVM IR that their binary stage compiles
    (Iluvatar CoreX; llir_stamps.py). `warp_size`: the target's (64 on CoreX)."""
    warp_size: int = 64
    timer_asm: str = llir_stamps.GLOBALTIMER_ASM
    name: str = "nvvm-llir"
    stage: str = "llir"
    code_format: str = "LLVM IR (NVVM intrinsics)"
    # No tagged-pointer path in these stamps: graph-captured launches get no slot (counted).
    times_graph_replays: bool = False

    def kernel_name(self, text):
        return llir_stamps.kernel_entry(text)[0]

    def stamp(self, text, kernel_id, plane_bytes, lanes, records=0):
        return llir_stamps.stamp_llir(text, kernel_id, plane_bytes, lanes, self.warp_size, self.timer_asm)


PTX = PtxStamper()


def target_kind(target):
    """"corex" for Iluvatar CoreX (also when an older driver reports it as "cuda": warp size 64),
    else Triton's target backend name ("cuda", "hip", ...)."""
    backend = getattr(target, "backend", None)
    if backend == "cuda":
        from ..tianshu import is_corex  # deferred: the tianshu package loads when asked for

        if is_corex(target):
            return "corex"
    return backend


def stamper_for(target, stages):
    """(stamper, None) for a target whose compiler registers `stages` (stage names, in order),
    or (None, why not)."""
    kind = target_kind(target)
    stages = list(stages)
    if kind == "cuda" and "ptx" in stages:
        return PTX, None
    if kind == "corex" and "llir" in stages and "ptx" not in stages:
        return NvvmLlirStamper(warp_size=int(getattr(target, "warp_size", 64) or 64)), None
    return None, (f"no stamper for target {kind!r} with stages {', '.join(stages) or 'none'} "
                  f"(stampers: PTX for 'cuda', NVVM LLVM IR for 'corex')")


__all__ = ["NotStampable", "NvvmLlirStamper", "PTX", "PtxStamper", "stamper_for", "target_kind"]
