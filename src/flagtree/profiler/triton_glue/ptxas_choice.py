"""Which ptxas builds a stamped copy of a kernel that another ptxas compiled.

A kernel's PTX carries the PTX ISA version of the ptxas its compile saw (``.version 9.0`` for
CUDA 13's). torch inductor compiles with the ptxas torch ships (``torch/bin/ptxas``: its compile
workers, and the parent when it compiles in process, set ``TRITON_PTXAS_PATH`` to it), while a
process that loads the same kernels from inductor's caches never sets it: Triton's bundled ptxas
then refuses the kept PTX ("Unsupported .version"). The ptxas inductor would have used is tried
then, and the one that worked is kept for the process's later kernels.

Triton reads ``TRITON_PTXAS_PATH`` (and ``TRITON_PTXAS_BLACKWELL_PATH`` for sm_100 and later) at
each compile, on every version this package supports: the variables are set for the one build
and put back after, under the caller's lock.
"""
import contextlib
import os
import sys

VARIABLES = ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH")
_chosen = [None]  # the ptxas that built a refused PTX, tried first for the next kernel


def refused_version(error):
    """Whether `error` (the binary stage's) is ptxas refusing the PTX's ISA version."""
    return "Unsupported .version" in str(error)


def candidates():
    """ptxas programs newer than Triton's own may be, most likely first: the variable's,
    torch's (inductor's choice), the CUDA toolkit's. Executable files only."""
    found = [os.environ.get("TRITON_PTXAS_PATH")]
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        found.append(os.path.join(os.path.dirname(torch.__file__), "bin", "ptxas"))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            found.append(os.path.join(home, "bin", "ptxas"))
    unique = []
    for path in found:
        if path and path not in unique and os.path.isfile(path) and os.access(path, os.X_OK):
            unique.append(path)
    return unique


@contextlib.contextmanager
def using(path):
    """Triton's binary stage runs `path` as ptxas inside the block."""
    before = {name: os.environ.get(name) for name in VARIABLES}
    try:
        for name in VARIABLES:
            os.environ[name] = path
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def build(run):
    """run() (the binary stage) with the ptxas that built a refused PTX before if there is one,
    else Triton's; where ptxas refuses the PTX's version, again with each candidate until one
    builds it. The first refusal is raised when none does."""
    first = None
    for path in dict.fromkeys([_chosen[0], None, *candidates()]):
        try:
            with (using(path) if path else contextlib.nullcontext()):
                binary = run()
        except Exception as error:  # Triton's PTXASError, or a RuntimeError on older Tritons
            if not refused_version(error):
                raise
            first = first or error
            continue
        if path:
            _chosen[0] = path
        return binary
    raise first
