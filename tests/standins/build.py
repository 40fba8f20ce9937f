"""Compiling and loading stand-in vendor libraries (see tests/standins/__init__.py)."""
import ctypes
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def compiler():
    """The system C compiler: $CC, else cc, gcc or clang; None when there is none."""
    for candidate in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate.split()[0]):
            return candidate
    return None


def cuda_header_dirs():
    """The folders with CUPTI's and CUDA's headers that the native build uses
    (csrc/find_cuda_headers.py); [] when there are none."""
    import sys

    root = os.path.dirname(os.path.dirname(HERE))
    out = subprocess.run([sys.executable, os.path.join(root, "csrc", "find_cuda_headers.py")],
                         capture_output=True, text=True).stdout.strip()
    return [d for d in out.split(";") if d]


def cuda_header_flags(standin):
    """The -I flags of cuda_header_dirs() for building `standin` (a name for the message); the
    test is skipped when there are no headers."""
    dirs = cuda_header_dirs()
    if not dirs:
        import pytest

        pytest.skip(f"no CUPTI headers to build the {standin} stand-in against")
    return [f"-I{d}" for d in dirs]


def build_standin(source, out_dir, library, extra_flags=()):
    """Compiles tests/standins/<source> into <out_dir>/<library> and returns its path.

    No soname is set, so that a loader-path lookup of the vendor's library name does not find
    the stand-in by its soname once it is loaded."""
    cc = compiler()
    if cc is None:
        import pytest

        pytest.skip("no C compiler ($CC, cc, gcc, clang) to build the stand-in library")
    out = os.path.join(os.fspath(out_dir), library)
    command = cc.split() + ["-shared", "-fPIC", "-O1", "-std=gnu11", "-Wall", "-Werror", "-pthread",
                            "-o", out, os.path.join(HERE, source), *extra_flags]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building stand-in {source} failed:\n{' '.join(command)}\n{result.stderr}")
    return out


def load_standin(path):
    """The stand-in loaded with RTLD_GLOBAL (the copy a backend's dlopen of `path` will get)."""
    return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
