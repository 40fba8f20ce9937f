"""Stand-in vendor libraries for CPU tests: small C sources exporting a vendor's documented
profiling symbols and record layouts, plus test-only control functions (standin_*).

`build_standin(source, out_dir, library)` compiles one of them with the system C compiler
into `out_dir/library`; `load_standin(path)` loads it with ctypes (RTLD_GLOBAL), so that a
backend dlopening the same path gets the very same copy."""
from .build import build_standin, load_standin

__all__ = ["build_standin", "load_standin"]
