"""The native core (_native), imported here once for every module that calls it. Without it (a
source tree not yet built) the package still imports and tools that only read profiles still run:
every attribute of the stand-in raises an ImportError saying what is missing."""
try:
    from . import _native as native
except ImportError as _error:

    class _MissingNative:
        def __init__(self, error):
            self.error = error

        def __getattr__(self, name):
            raise ImportError(f"flagtree.profiler's native module is missing ({self.error}); "
                              f"install the package with pip install .")

    native = _MissingNative(_error)
