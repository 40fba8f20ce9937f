"""What the non-NVIDIA CUPTI-dialect backends (mthreads through MUPTI, cann through MSPTI) share:
finding the vendor library in a documented order, starting the native tracer of that dialect
(``native.<name>.<prefix>_acquire``), the vendor mode grammar (backends/vendor/mode_options.py), and the
metadata. Each backend names its library, environment variable, install folders, metrics and
options; the native side is one shared tracer instantiated per vendor table.
"""

from ... import _env
from ..base import Backend, BackendUnavailable
from ..libraries import acquire_first, could_load, library_candidates
from .mode_options import parse_vendor_mode
from ...native_core import native


class DialectBackend(Backend):
    #: the vendor library's file name (libmupti.so, libmspti.so)
    library = ""
    #: the environment variable naming it (file or folder), searched first
    env_path = ""
    #: other names of the library tried on the loader path after `library` (e.g. libmupti.so.1)
    loader_names = ()
    #: native function prefix (mupti, mspti)
    prefix = ""
    #: vendor_metrics names accepted by the mode
    metrics = ()
    #: {option key: parser} accepted by the mode
    options = {}

    def __init__(self):
        self._library = None

    # --- where the library comes from ---
    def install_dirs(self):
        """[(where, folder or None)] after the variable and an already loaded copy."""
        return []

    def candidates(self):
        """[(where, path)] in the documented order; path None when that place is not set."""
        return library_candidates(self.library, self.env_path, _env.text(self.env_path), self.install_dirs(),
                                  self.loader_names)

    def unavailable_reason(self):
        tried = [path for _, path in self.candidates() if path]
        if not any(could_load(p) for p in tried):
            return f"{self.library} not found; looked at: " + ", ".join(tried)
        return None

    # --- mode ---
    def vendor_mode(self, mode):
        return parse_vendor_mode(mode, self.name, self.metrics, self.options)

    def check_mode(self, mode):
        parsed = self.vendor_mode(mode)
        if not parsed.runtime_base:
            raise ValueError(f"backend {self.name!r}: runtime_base=off is not supported: the in-process "
                             f"{self.prefix.upper()} records are what every other metric is joined to")
        return None if mode is None else parsed

    def session_mode(self, session):
        """The session's VendorMode (the default one when it gave no mode)."""
        return session.options or self.vendor_mode(None)

    # --- life cycle ---
    def check_no_other_profiler(self):
        """Raises RuntimeError naming a profiler that must not run beside this one (none by default)."""

    def acquire(self, options):
        self.check_no_other_profiler()
        getattr(getattr(native, self.name), f"{self.prefix}_set_buffer_limit")(_env.buffer_limit())
        buffer_bytes = _env.buffer_size()
        acquire = getattr(getattr(native, self.name), f"{self.prefix}_acquire")
        tried = acquire_first(self.candidates(), lambda path: acquire(path, buffer_bytes), native.LibraryNotFound)
        if tried is None:
            self._library = getattr(getattr(native, self.name), f"{self.prefix}_library")()
            self.after_acquire()
            return
        raise BackendUnavailable(
            f"the {self.name} backend needs {self.library} and none could be loaded; set {self.env_path} to "
            f"its path. Tried:\n  " + "\n  ".join(tried))

    def after_acquire(self):
        """Called once the tracer runs (e.g. to find the vendor driver)."""

    def flush(self):
        getattr(getattr(native, self.name), f"{self.prefix}_flush")()

    def release(self):
        getattr(getattr(native, self.name), f"{self.prefix}_release")()

    def dropped_records(self):
        return int(getattr(getattr(native, self.name), f"{self.prefix}_dropped")())

    def describe(self):
        stats = dict(getattr(getattr(native, self.name), f"{self.prefix}_stats")())
        return {"backend": self.name, f"{self.prefix}_library": self._library, f"{self.prefix}_records": stats}
