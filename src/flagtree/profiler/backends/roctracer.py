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

from .. import _env
from .libraries import acquire_first, could_load, library_candidates
from .base import Backend, BackendUnavailable
from ..native_core import native

LIBRARY = "libroctracer64.so"
ENV_PATH = "FLAGTREE_PROFILER_ROCTRACER_PATH"


def roctracer_candidates():
    """[(where, path)] in the documented order; path None when that place is not set."""
    rocm = os.environ.get("ROCM_PATH", "").strip()
    places = [("$ROCM_PATH/lib", os.path.join(rocm, "lib") if rocm else None), ("/opt/rocm/lib", "/opt/rocm/lib")]
    return library_candidates(LIBRARY, ENV_PATH, _env.roctracer_path(), places, (LIBRARY + ".4",))


class RoctracerBackend(Backend):
    name = "roctracer"

    def __init__(self):
        self._library = None

    def unavailable_reason(self):
        tried = [path for _, path in roctracer_candidates() if path]
        if not any(could_load(p) for p in tried):
            return f"{LIBRARY} not found; looked at: " + ", ".join(tried)
        return None

    def acquire(self, options):
        buffer_bytes = _env.buffer_size()
        tried = acquire_first(roctracer_candidates(),
                              lambda path: native.roctracer.roctracer_acquire(path, buffer_bytes),
                              native.LibraryNotFound)
        if tried is None:
            self._library = native.roctracer.roctracer_library()
            return
        raise BackendUnavailable(
            f"the roctracer backend needs ROCm's roctracer library ({LIBRARY}) and none could be "
            f"loaded; set {ENV_PATH} to its path, or ROCM_PATH to the ROCm install. Tried:\n  "
            + "\n  ".join(tried))

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
