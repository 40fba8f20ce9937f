"""What every backend provides to a session: start, flush, stop, and facts for the outputs.

A session's mode string is parsed once, by check_mode() at start, through the backend's
``mode_grammar`` (mode.py, the one grammar of every backend); options_from() turns what it
read into the backend's options object, which is kept on the session (``session.options``) and
is what acquire() and attach_session() receive; ``session.mode`` is its normalised text
(``options.canonical()``), for the metadata file.
What a backend keeps per session lives in ``session.state``, an instance of the backend's
``SessionState`` class made fresh for each session, never in attributes added to the session.

What a backend needs from Triton is declared, not wired: ``launch_hooks`` (a LaunchHooks) goes
into Triton's launch enter/exit hooks when the backend's first session opens and comes out after
its last closes; the session opens and closes a backend through open_use() and close_use(),
which wrap acquire() and release() with that.
"""
import threading

from .. import _env
from .libraries import acquire_first, could_load, library_candidates
from .mode import ModeGrammar


class BackendUnavailable(RuntimeError):
    """The backend is known but cannot run here (library or device missing)."""


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


class LaunchHooks:
    """A backend's declaration of Triton launch hooks: `enter` and `exit` name its attributes
    (methods, or callables `prepare` sets) called with Triton's launch metadata, `enter_order` and
    `exit_order` their place in Triton's chains (triton_glue/launch_hooks.attach: "first", "last"
    or None). `prepare` names a method called once Triton's hooks are found, before they go in
    (to choose the hooks for this process); when it returns False none go in for this use (the
    backend takes its launches another way). `required`: a Triton without launch hooks makes the
    backend unavailable; otherwise it runs without them (``launch_hooks_missing`` on the backend
    says why)."""
    __slots__ = ("enter", "exit", "enter_order", "exit_order", "prepare", "required")

    def __init__(self, enter=None, exit=None, *, enter_order=None, exit_order="first", prepare=None,
                 required=True):
        self.enter, self.exit, self.enter_order, self.exit_order = enter, exit, enter_order, exit_order
        self.prepare, self.required = prepare, required

    def install(self, backend, undo):
        """Attaches the named methods of `backend`, appending each undo function to `undo`."""
        from ..triton_glue.launch_hooks import attach, launch_hook_owner  # deferred: loads Triton's hook owner

        try:
            owner = launch_hook_owner()
        except (ImportError, RuntimeError) as error:
            if self.required:
                raise BackendUnavailable(f"backend {backend.name!r}: {error}") from None
            backend.launch_hooks_missing = str(error)
            return
        if self.prepare and getattr(backend, self.prepare)() is False:
            return
        for attribute, name, order in (("launch_enter_hook", self.enter, self.enter_order),
                                       ("launch_exit_hook", self.exit, self.exit_order)):
            if name:
                undo.append(attach(owner, attribute, getattr(backend, name), order=order))


def _undo_all(undo):
    """Runs and forgets each undo function, the last added first."""
    while undo:
        undo.pop()()


class Backend:
    #: name as users spell it in start(backend=...)
    name = ""
    #: the options start(mode=...) accepts (mode.py); the empty grammar accepts no mode
    mode_grammar = ModeGrammar()
    #: the mode a session without one gets (None: no mode)
    default_mode = None
    #: the per-session state this backend keeps: a class whose no-argument instance becomes
    #: ``session.state`` at start (None: the backend keeps nothing per session)
    SessionState = None
    #: where this backend's kernel times come from (the native TimeSource): a session takes only
    #: the launches and records of its own source, so two routes open at once never count a
    #: launch twice
    time_source_kind = "tracer"
    #: the vendor library loaded with dlopen ("": none), the environment variable naming it (the
    #: file or its folder, searched first) and other names tried on the loader path after it
    library = ""
    env_path = ""
    loader_names = ()
    #: Triton launch hooks this backend needs (a LaunchHooks; None: none): installed by
    #: open_use() for the first session, removed by close_use() after the last
    launch_hooks = None
    #: why the declared launch hooks are not installed (a Triton without them), else ""
    launch_hooks_missing = ""
    #: whether flush() may run on the part writer's thread while the program goes on (a
    #: schedule's window close then returns before it: session_outputs.write_parts)
    flush_off_thread = False

    def activity_changed(self):
        """One of this backend's sessions was activated or deactivated (activate(), deactivate(),
        a schedule's step). Nothing by default."""

    def quiet_ahead(self, seconds):
        """A schedule of one of this backend's sessions went quiet (its steps not recorded), its
        next window about `seconds` away (math.inf: none comes). A backend whose library costs
        the program while held quiet may let it go now rather than after its idle time; it
        returns how many seconds before the window wake_ahead() should come, or None (the
        default: nothing done)."""
        return None

    def wake_ahead(self):
        """The window that quiet_ahead() was told of is about that many seconds away."""

    def window_lead(self):
        """Seconds before a session of this backend opens with none running (an armed trigger's
        next window) that prepare_window() should come; None (the default): nothing to prepare."""
        return None

    def prepare_window(self):
        """A session of this backend is about window_lead() seconds away and none runs: a backend
        whose start is costly may do it now, off the program's thread."""

    def unavailable_reason(self):
        """None when this backend can run here, else a sentence saying what is missing.
        Cheap and side-effect free: nothing is started or subscribed."""
        return None

    # -- the vendor library: each backend names it, the base searches its documented order --
    def install_dirs(self):
        """[(where, folder or None)] searched after the variable and an already loaded copy."""
        return []

    def library_candidates(self):
        """[(where, path)] in the documented order; path None where that place is not set."""
        return library_candidates(self.library, self.env_path, _env.text(self.env_path), self.install_dirs(),
                                  self.loader_names)

    def library_unavailable_reason(self):
        """None when a candidate could load, else a sentence naming where it looked."""
        tried = [path for _, path in self.library_candidates() if path]
        if not any(could_load(p) for p in tried):
            return f"{self.library} not found; looked at: " + ", ".join(tried)
        return None

    def load_library(self, acquire, not_found, candidates=None, hint=""):
        """Calls acquire(path) on each candidate (library_candidates() by default) until one
        loads; BackendUnavailable listing every place tried when none does. `not_found`: the
        exception of a candidate that cannot load; `hint`: what the user can set instead."""
        tried = acquire_first(self.library_candidates() if candidates is None else candidates, acquire, not_found)
        if tried is None:
            return
        hint = hint or f"set {self.env_path} to its path"
        raise BackendUnavailable(f"the {self.name} backend needs {self.library} and none could be loaded; "
                                 f"{hint}. Tried:\n  " + "\n  ".join(tried))

    # -- the flagtree-profiler command ----------------------------------------------------------
    def before_command(self):
        """Called by `flagtree-profiler` in its own process, before the target starts, when this
        backend is chosen (cann restarts the command with its library in LD_PRELOAD)."""

    def check_mode(self, mode):
        """The mode parsed into this backend's options object (options_from()), or a ValueError
        naming the supported forms. The session keeps the result (``session.options``). Every
        backend parses through its ``mode_grammar``: override options_from(), not this."""
        if mode is None:
            mode = self.default_mode
        return self.options_from(self.mode_grammar.parse(mode, self.name))

    def options_from(self, parsed):
        """This backend's options from the grammar's ParsedMode (``parsed.text`` is None when the
        session gave no mode): by default None for no mode, else the ParsedMode itself. Checks
        across options raise mode_error()."""
        return None if parsed.text is None else parsed

    def mode_error(self, mode, problem):
        """A ValueError for a mode the grammar read but this backend refuses, worded as the
        grammar words its own."""
        return self.mode_grammar.error(self.name, mode, problem)

    # -- what the session calls: acquire()/release() with the declared hooks around them -------
    def _declared_use(self):
        use = self.__dict__.get("_declared")
        if use is None:
            use = self.__dict__.setdefault("_declared", (SharedUse(), []))
        return use

    def open_use(self, options):
        """acquire(), then the declared launch hooks for the first open session (if they cannot
        go in, the acquire is undone and the error raised)."""
        self.acquire(options)
        if self.launch_hooks is None:
            return
        use, undo = self._declared_use()
        try:
            use.acquire(lambda: self.launch_hooks.install(self, undo))
        except BaseException:
            _undo_all(undo)  # hooks that went in before the failing one
            self.release()
            raise

    def close_use(self):
        """The declared launch hooks out after the last open session, then release()."""
        if self.launch_hooks is not None:
            use, undo = self._declared_use()
            use.release(lambda: _undo_all(undo))
        self.release()

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
