"""What every backend provides to a session: start, flush, stop, and facts for the outputs."""


class BackendUnavailable(RuntimeError):
    """The backend is known but cannot run here (library or device missing)."""


class Backend:
    #: name as users spell it in start(backend=...)
    name = ""
    #: modes accepted in start(mode=...), besides None
    modes = ()

    def unavailable_reason(self):
        """None when this backend can run here, else a sentence saying what is missing.
        Cheap and side-effect free: nothing is started or subscribed."""
        return None

    def check_mode(self, mode):
        """The mode as this backend will use it, or ValueError naming the supported forms.
        Backends with options in their mode string (``"pcsampling:interval=18"``) override this."""
        if mode is None or mode in self.modes:
            return mode
        supported = ", ".join(self.modes) if self.modes else "none yet (leave mode unset)"
        raise ValueError(f"backend {self.name!r} does not support mode {mode!r}; supported modes: {supported}")

    def acquire(self, mode):
        """Starts collecting for one more session (the first call starts the vendor tracer)."""
        raise NotImplementedError

    def attach_session(self, session):
        """Called after acquire() with the session (``.slot``, ``.mode``, ``.data``, ``.name``):
        backends that attach extras to launches (counters, PC samples) start here, and call
        ``_native.session_enable_extras(session.slot)``."""

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
        """Facts for the metadata file (library path and version, ...)."""
        return {"backend": self.name}
