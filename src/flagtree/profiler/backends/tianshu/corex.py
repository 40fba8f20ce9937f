"""Whether this machine is Iluvatar CoreX, which older drivers report to Triton as target "cuda"
(backend selection) and which the tianshu backend's metadata states."""
import glob
import sys


def corex_detected():
    """The tells that need no driver call: torch built for CoreX (torch.corex) or a CUDA driver
    under /usr/local/corex/lib."""
    torch = sys.modules.get("torch")
    return bool((torch is not None and getattr(torch, "corex", False) is True)
                or glob.glob("/usr/local/corex/lib/libcuda.so*"))


def is_corex(target):
    """Whether Triton's current target, reported as "cuda", is CoreX: corex_detected(), or
    CoreX's warp size of 64."""
    if getattr(target, "backend", None) != "cuda":
        return False
    return corex_detected() or getattr(target, "warp_size", None) == 64
