"""What the non-NVIDIA CUPTI-dialect backends (mthreads through MUPTI, cann through MSPTI) share:
starting the native tracer of that dialect (``native.<name>.<prefix>_acquire``, the backend's own
submodule) on the library the base's search finds, the vendor form of the mode grammar
(backends/mode.py), and the metadata. Each backend names its library, environment variable,
install folders, metrics and options; the native side is one shared tracer instantiated per
vendor table.
"""

from .. import _env
from .base import Backend
from .mode import vendor_grammar, vendor_mode
from ..native_core import native


class DialectBackend(Backend):
    #: native function prefix (mupti, mspti)
    prefix = ""
    #: the vendor grammar (mode.vendor_grammar: its vendor_metrics names and options)
    mode_grammar = vendor_grammar(())

    def __init__(self):
        self._library = None

    def unavailable_reason(self):
        return self.library_unavailable_reason()

    # --- mode ---
    def options_from(self, parsed):
        if not parsed["runtime_base"]:
            raise self.mode_error(parsed.text, f"runtime_base=off is not supported: the in-process "
                                  f"{self.prefix.upper()} records are what every other metric is joined to")
        return None if parsed.text is None else vendor_mode(parsed)

    def session_mode(self, session):
        """The session's VendorMode (the default one when it gave no mode)."""
        return session.options or vendor_mode(self.mode_grammar.parse(None, self.name))

    # --- life cycle ---
    def check_no_other_profiler(self):
        """Raises RuntimeError naming a profiler that must not run beside this one (none by default)."""

    def acquire(self, options):
        self.check_no_other_profiler()
        self._native("set_buffer_limit")(_env.buffer_limit())
        buffer_bytes = _env.buffer_size()
        acquire = self._native("acquire")
        self.load_library(lambda path: acquire(path, buffer_bytes), native.LibraryNotFound)
        self._library = self._native("library")()
        self.after_acquire()

    def _native(self, function):
        """This backend's native function `<prefix>_<function>`, from its own submodule."""
        return getattr(getattr(native, self.name), f"{self.prefix}_{function}")

    def after_acquire(self):
        """Called once the tracer runs (e.g. to find the vendor driver)."""

    def flush(self):
        self._native("flush")()

    def release(self):
        self._native("release")()

    def dropped_records(self):
        return int(self._native("dropped")())

    def describe(self):
        stats = dict(self._native("stats")())
        return {"backend": self.name, f"{self.prefix}_library": self._library, f"{self.prefix}_records": stats}
