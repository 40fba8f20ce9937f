"""What every backend provides to a session: start, flush, stop, and facts for the outputs.

A session's mode string is parsed once, by check_mode() at start: the options object it returns
is kept on the session (``session.options``) and is what acquire() and attach_session() receive;
``session.mode`` is its normalised text (``options.canonical()``), for the metadata file.
What a backend keeps per session lives in ``session.state``, an instance of the backend's
``SessionState`` class made fresh for each session, never in attributes added to the session.
"""
import threading
from dataclasses import dataclass


class BackendUnavailable(RuntimeError):
    """The backend is known but cannot run here (library or device missing)."""


@dataclass(frozen=True)
class PlainMode:
    """The options of a backend whose modes are single words (``Backend.modes``)."""
    word: str

    def canonical(self):
        return self.word


DEVICE_INFO_KEYS = ("arch", "num_sms", "clock_rate", "memory_clock_rate", "bus_width")


def device_info_of(kind, devices):
    """The tree output's device_info for GPUs of `kind` ("CUDA", "MUSA") from the native
    module's device list: {kind: {index: {arch, num_sms, clocks, bus_width}}}."""
    return {kind: {str(d["index"]): {k: d[k] for k in DEVICE_INFO_KEYS} for d in devices}}


def mode_text(options):
    """The normalised mode string of a session's options (None when no mode was given)."""
    return None if options is None else options.canonical()


class SharedUse:
    """The reference count of something every open session of a backend shares (a patch, a set
    of hooks): the first acquire() installs it, the last release() takes it down. ``lock`` (an
    RLock) may be held around acquire() to check a session's options against the open ones."""

    def __init__(self):
        self.lock = threading.RLock()
        self.users = 0

    def acquire(self, install):
        """One more user; install() runs for the first (if it raises, the count stays)."""
        with self.lock:
            if self.users == 0:
                install()
            self.users += 1

    def release(self, uninstall):
        """One user less; uninstall() runs for the last. A release without an acquire is ignored."""
        with self.lock:
            if self.users == 0:
                return
            self.users -= 1
            if self.users == 0:
                uninstall()


class Backend:
    #: name as users spell it in start(backend=...)
    name = ""
    #: modes accepted in start(mode=...), besides None
    modes = ()
    #: the per-session state this backend keeps: a class whose no-argument instance becomes
    #: ``session.state`` at start (None: the backend keeps nothing per session)
    SessionState = None
    #: where this backend's kernel times come from (the native TimeSource): a session takes only
    #: the launches and records of its own source, so two routes open at once never count a
    #: launch twice
    time_source_kind = "tracer"

    def unavailable_reason(self):
        """None when this backend can run here, else a sentence saying what is missing.
        Cheap and side-effect free: nothing is started or subscribed."""
        return None

    def check_mode(self, mode):
        """The mode parsed into this backend's options object (None when mode is None), or a
        ValueError naming the supported forms. The session keeps the result (``session.options``).
        Backends with options in their mode string (``"pcsampling:interval=18"``) override this."""
        if mode is None:
            return None
        if mode in self.modes:
            return PlainMode(mode)
        supported = ", ".join(self.modes) if self.modes else "none yet (leave mode unset)"
        raise ValueError(f"backend {self.name!r} does not support mode {mode!r}; supported modes: {supported}")

    def acquire(self, options):
        """Starts collecting for one more session (the first call starts the vendor tracer);
        `options` is what check_mode() returned for it."""
        raise NotImplementedError

    def attach_session(self, session):
        """Called after acquire() with the session (``.options``, ``.state``, ``.data``, ``.name``,
        and ``.slot``, its handle for the native calls): backends that attach extras to launches
        (counters, PC samples) start here, and call ``_native.session.session_enable_extras(session.slot)``."""

    def session_outputs(self, session):
        """At finalize, after flush() and before the outputs are written: attach what is still
        buffered for this session. Returns extra counts for the metadata file (a dict)."""
        return {}

    def detach_session(self, session):
        """Called before release() when the session closes."""

    def flush(self):
        """Delivers every record of work launched so far (waits for the device)."""

    def release(self):
        """Ends collecting for one session (the last call stops the vendor tracer)."""

    def dropped_records(self):
        """Records the vendor library reported as lost since the process started."""
        return 0

    def device_info(self):
        """{"CUDA": {"0": {"arch": ..., "num_sms": ..., ...}}}, for the tree output."""
        return {}

    def describe(self):
        """Facts for the metadata file (library path and version, "devices", ...)."""
        return {"backend": self.name}

    def metadata_facts(self):
        """describe(), with "devices" (a list) always there: [] for a backend whose library
        describes no devices (roctracer)."""
        facts = dict(self.describe())
        facts.setdefault("devices", [])
        return facts
