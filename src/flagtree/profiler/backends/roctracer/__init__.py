"""The roctracer backend (AMD GPUs): ROCm's roctracer library, loaded with dlopen at run time.

HIP API callbacks on the launch, copy and set calls capture the launching thread's context;
the default activity pool's HIP_OPS records give each kernel's and copy's device time.

Which libroctracer64 is loaded, in this order (the first that loads wins):
  1. FLAGTREE_PROFILER_ROCTRACER_PATH (the library file, or a folder holding it)
  2. a copy already loaded in this process (HIP reports to one copy only)
  3. $ROCM_PATH/lib/libroctracer64.so
  4. /opt/rocm/lib/libroctracer64.so
  5. the system loader path (libroctracer64.so, libroctracer64.so.4)

Not yet run on AMD hardware: it is tested only through a stand-in library built by the
tests (tests/standins/roctracer_standin.c) from roctracer's documented interface.

roctracer reports no count of dropped records, so dropped_records() is 0; records lost by the
library show instead as launches without a record ("lost_launches" in the metadata) and
records whose launch was not seen as "unattributed_records".
"""
import os

from ... import _env
from ..base import Backend
from ...native_core import native

LIBRARY = "libroctracer64.so"
ENV_PATH = "FLAGTREE_PROFILER_ROCTRACER_PATH"


class RoctracerBackend(Backend):
    name = "roctracer"
    library = LIBRARY
    env_path = ENV_PATH
    loader_names = (LIBRARY + ".4",)

    def __init__(self):
        self._library = None

    def install_dirs(self):
        rocm = os.environ.get("ROCM_PATH", "").strip()
        return [("$ROCM_PATH/lib", os.path.join(rocm, "lib") if rocm else None), ("/opt/rocm/lib", "/opt/rocm/lib")]

    def unavailable_reason(self):
        return self.library_unavailable_reason()

    def acquire(self, options):
        buffer_bytes = _env.buffer_size()
        self.load_library(lambda path: native.roctracer.roctracer_acquire(path, buffer_bytes), native.LibraryNotFound,
                          hint=f"set {ENV_PATH} to its path, or ROCM_PATH to the ROCm install")
        self._library = native.roctracer.roctracer_library()

    def flush(self):
        native.roctracer.roctracer_flush()

    def release(self):
        native.roctracer.roctracer_release()

    def dropped_records(self):
        # roctracer has no dropped-record query; see the module docstring.
        return 0

    def device_info(self):
        # roctracer describes no devices (no arch, compute units or clocks), so the tree
        # carries no device table for HIP: {}.
        return {}

    def describe(self):
        return {"backend": self.name, "roctracer_library": self._library,
                "roctracer_version": native.roctracer.roctracer_version() or None,
                "roctracer_records": dict(native.roctracer.roctracer_stats()),
                "dropped_records_note": "roctracer reports no dropped-record count; lost records appear "
                                        "as lost_launches, records without a seen launch as "
                                        "unattributed_records"}
