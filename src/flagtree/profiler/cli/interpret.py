"""Choosing Triton's interpreter for the target on a machine without a GPU, and saying so."""
import ctypes
import os

from .. import _env
from .output import say


def gpu_driver_present():
    """Whether torch.cuda.is_available() could be true: a CUDA (or ROCm HIP) driver loads.
    Loading the library initializes nothing, unlike importing torch and asking it."""
    for library in ("libcuda.so.1", "libamdhip64.so"):
        try:
            ctypes.CDLL(library)
            return True
        except OSError:
            pass
    return False


def maybe_use_interpreter(options):
    """Sets TRITON_INTERPRET=1 (before the target imports triton) when the interpreter backend is
    chosen (-b or FLAGTREE_PROFILER_BACKEND), or when no backend is chosen and no GPU can run
    kernels; a TRITON_INTERPRET the user set is left alone. Returns why it set it, or None."""
    if "TRITON_INTERPRET" in os.environ:
        return None
    chosen = options.backend or _env.backend()
    if chosen == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"
        return "chosen"
    if chosen or gpu_driver_present():
        return None
    os.environ["TRITON_INTERPRET"] = "1"
    return "no GPU"


def announce_backend(opened, set_interpret):
    if opened is None or opened.backend.name != "interpreter":
        return
    if set_interpret == "no GPU":
        say("no GPU driver found, so TRITON_INTERPRET=1 was set for the script: Triton's interpreter runs "
             "its kernels on the CPU, with host-measured kernel times")
    elif set_interpret == "chosen":
        say("backend interpreter: TRITON_INTERPRET=1 was set for the script; kernel times are host-measured")
    else:
        say("profiling Triton's interpreter (TRITON_INTERPRET=1); kernel times are host-measured")
