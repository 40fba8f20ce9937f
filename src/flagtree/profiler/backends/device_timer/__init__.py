"""backend="device_timer": every Triton kernel launched in a session timed on the device, with
no vendor tracing library loaded (no CUPTI: it runs beside torch.profiler or Nsight Systems).

Kernels compiled while a session is open carry global-timer stamps (compiler_hook.py,
ptx_stamps.py); each launch writes one record into a device ring through a slot address that
Triton's launcher gets from our profile allocator, a native function: on the host a launch
costs that one call (the slot, the launch's context), nothing else. The ring is read back
asynchronously on its own stream into pinned memory when a sixteenth fills, at flush() and at
finalize(), and a native worker hands each launch's record to the same session layer that CUPTI's
records reach: tree, trace and metadata outputs are written as for backend="nvidia". Stamps
are mapped onto the profile's monotonic clock with an offset probed at start (the device reading
the host's clock and the host reading the device's, through write-combined mapped memory; or the
previous session's finalize probe when it is recent: clock.py) and probed again at finalize (the
drift is in the metadata).

Kernels with kernel-side scopes (``flagtree.profiler.language``) get their scopes as with
backend="instrumentation", and their device time from their scope buffers' own header stamps
(scopes.py); mode ``scopes=off`` compiles no scopes.

Covers Triton kernels only: torch's own kernels, library kernels (cuBLAS) and copies are not
seen. Compiled Triton kernels without stamps (held by libraries, loaded from caches, inductor's
launchers) are stamped at their first launch in a session, or else counted by kernel name
(untimed.py; mode ``events=on``: timed by CUDA events on their launch's stream, event_timed.py;
docs/reference/device-timer.md).
"""
import warnings
from dataclasses import dataclass, field

from ...triton_glue import kernels as triton_kernels, target as triton_target
from ...triton_glue.launch_hooks import attach, attach_kernel_load_hook, launch_hook_owner
from ...native_core import native as _native_module
from ..base import Backend, BackendUnavailable, SharedUse, device_info_of
from ...triton_glue import stages as triton_stages
from . import armed, compiler_hook, event_timed, graph_replays, route, unseen_graphs, untimed
from .compile_pause import CompilePause
from .clock import RingClock
from . import scopes as kernel_scopes
from ...kernel_scopes.scopes import InstrumentationState

from .ring_options import DEFAULT_GRAPH_REPLAYS, DEFAULT_SLOTS, MODE_GRAMMAR, RingOptions, parse_mode, ring_options  # noqa: F401


@dataclass
class DeviceTimerState:
    """Per session: the ring's counts when it started (its metadata counts the difference)."""
    counts_at_start: dict = field(default_factory=dict)
    stamped_at_start: int = 0
    scoped_at_start: dict = field(default_factory=dict)  # the scopes' counts (scopes.py)
    untimed_at_start: dict = field(default_factory=dict)  # launches counted untimed (untimed.py)
    scopes: InstrumentationState = field(default_factory=InstrumentationState)  # kernel_scopes.py's
    armed: dict = None  # the backend's armed route when the session started (armed.py), or None


def _native():
    return _native_module


def _cuda_driver_version():
    from ..nvidia.backend import cuda_driver_version  # deferred: backend modules load when asked for

    return cuda_driver_version()


def start_cuda_ring(slots, batch, graph_records):
    """The ring on the current CUDA device (the CUDA driver API: also CoreX's libcuda); the
    clock offset probed at start. `graph_records`: replay records per captured launch (0: none)."""
    if not _cuda_driver_version():
        raise BackendUnavailable("backend 'device_timer' needs the CUDA driver (libcuda.so.1) and a GPU")
    return _native().device_timer.device_timer_start(slots, batch, graph_records)


class DeviceTimerBackend(Backend):
    name = "device_timer"
    SessionState = DeviceTimerState
    time_source_kind = "device_timer"

    def __init__(self):
        self._use = SharedUse()
        self._lock = self._use.lock  # also guards the ring's sessions and scopes
        self._options = None
        self._undo = []
        self.clock = RingClock()  # the offset of the global timer, probed or the last one kept
        self._hooked = []  # open sessions with hook="triton"
        self._undo_exit = None
        self.support = None  # route.RouteSupport of the target, found at the first acquire
        # (slots, batch, graph records) -> the clock probe's dict; a CPU test puts the host
        # stand-in ring here
        self.start_ring = start_cuda_ring
        self.scopes = None  # scopes.DeviceTimerScopes while kernel-side scopes are compiled in
        self.scopes_state = "off"  # "on", "off", or "off: <why>" (the metadata's device_timer_scopes)
        self._kept_scopes = None  # the scopes installed for every session that compiles them in
        self.untimed = untimed.UntimedLaunches()  # launches of unstamped kernels, counted
        self.events_state = "off"  # "on", "off", or "off: <why>" (the metadata's device_timer_events)
        self._graph_records = 0  # replay records per captured launch of the running ring
        self._sessions = []  # open sessions (companions included): whether one is active
        self.compile_pause = None  # compile_pause.CompilePause while the compiler route is installed
        self.armed = None  # {"mode", "at", "by"} while the route is armed with no session (armed.py)

    mode_grammar = MODE_GRAMMAR
    arm, disarm = armed.arm, armed.disarm  # the route installed with no session (armed.py)

    def options_from(self, parsed):
        return ring_options(parsed)

    def unavailable_reason(self):
        try:
            compiler_hook.check_triton()
        except BackendUnavailable as error:
            return str(error)
        if not _cuda_driver_version():
            return "no CUDA driver (libcuda.so.1) on this machine"
        return None

    # -- starting and stopping ---------------------------------------------------------------
    def acquire(self, options):
        options = options or RingOptions()
        with self._lock:
            if self._use.users and options != self._options:
                raise ValueError(armed.conflict(self, options))
            self._use.acquire(lambda: self._start(options))

    def _start(self, options):
        support = route.route_support()
        if not support.supported:
            raise BackendUnavailable(f"backend 'device_timer' cannot run for this target: {support.reason}")
        self.support = support
        try:
            self._install(options)
        except BaseException:
            self._uninstall()
            raise

    def _install(self, options):
        native = _native()
        self._options = options
        # The ring outlives the session (kept for the next one, as CUPTI stays attached for the
        # nvidia backend): allocating it and its pinned mirror costs milliseconds. free() lets go.
        # Replays of graph-captured launches are timed where the stamper handles tagged slot
        # pointers (PTX); elsewhere a captured launch gets no slot and is counted.
        graph_records = options.graph_replays if self.support.stamper.times_graph_replays else 0
        self.clock.start(native, self.start_ring, (options.slots, options.batch_slots(), graph_records))
        self._undo.append(native.device_timer.device_timer_drain)
        self._graph_records = graph_records
        if graph_records:  # kept with the ring (graph_replays.py says why), until free()
            graph_replays.install(native, unseen=self.untimed.graphs)
        # Ours stays Triton's profile allocator once installed (kernels stamped here outlive the
        # route: install_profile_allocator says why); it forwards what is not a ring slot.
        if triton_kernels.profile_allocator() is not native.device_timer.device_timer_allocate:
            native.device_timer.device_timer_set_fallback(
                triton_kernels.install_profile_allocator(native.device_timer.device_timer_allocate))
        previous = native.device_timer.device_timer_fallback()
        native.device_timer.device_timer_set_thread_device(triton_target.current_device_getter())
        before = triton_stages.compiler_knobs()
        self._install_scopes(options, previous)
        stamps = (native, native.device_timer.device_timer_plane_bytes(), native.device_timer.device_timer_layout()["lanes"], graph_records,
                  self.support.stamper)
        compiler_hook.install(*stamps, beside=self.scopes.mode if self.scopes else None)
        self._undo.append(compiler_hook.uninstall)
        self._install_pause(before)
        self._undo.append(attach_kernel_load_hook(_kernel_loaded))
        # Kernels compiled without the stamps: stamped at first launch, else timed by events.
        self.untimed.install(*stamps, events=self._start_events(native, options))
        self._undo.append(self.untimed.uninstall)

    def _install_pause(self, before):
        """The compiler route's knobs put back while no session is active (compile_pause.py)."""
        ours = triton_stages.compiler_knobs()
        if ours is None:
            return
        self.compile_pause = CompilePause(before, ours, self._pause_doors)
        graph_replays.on_capture(self.compile_pause.capture)

        def undo():  # first: the route's own undos find their knobs, put back as when active
            graph_replays.on_capture(None)
            self.compile_pause.set_active(True)
            self.compile_pause = None

        self._undo.append(undo)

    def _pause_doors(self, paused):
        if self.untimed.sight is not None:
            self.untimed.sight.pause(paused)

    def activity_changed(self):
        with self._lock:
            if self.compile_pause is not None:
                native = _native()
                self.compile_pause.set_active(any(native.session.session_is_active(s.slot) for s in self._sessions))

    def _start_events(self, native, options):
        """The event-timed launches beside the ring (kept with it), or None: mode events=off, or
        events that could not be made (the reason in device_timer_events)."""
        self.events_state = "off"
        if not options.events:
            return None
        try:
            native.device_timer.device_timer_events_start(event_timed.EVENT_PAIRS)
        except RuntimeError as error:
            self.events_state = f"off: {error}"
            return None
        self.events_state = "on"
        return event_timed.EventTimed(native)

    def _install_scopes(self, options, fallback):
        """Kernel-side scopes beside the stamps, where Triton's proton passes lower them (the PTX
        stamper's targets); their collector sits behind the ring's allocator."""
        self.scopes_state = "off"
        if not options.scopes:
            return
        why_not = self.scopes_unavailable()
        if why_not is not None:
            self.scopes_state = f"off: {why_not}"
            return
        # One for the backend's life: its registry of scoped kernels outlives a session, as
        # Triton's cache keeps the compiled kernels, which a later session launches unloaded.
        if self._kept_scopes is None:
            self._kept_scopes = kernel_scopes.DeviceTimerScopes()
        scopes = self._kept_scopes
        scopes.install(kernel_scopes.scope_options(), fallback)
        self.scopes, self.scopes_state = scopes, "on"

        def undo():
            self.scopes = None
            scopes.stop()

        self._undo.append(undo)

    def scopes_unavailable(self):
        """Why kernel-side scopes cannot be compiled in beside this target's stamps, or None."""
        why_not = kernel_scopes.unavailable_reason()
        if why_not is None and self.support.stamper.stage != "ptx":
            why_not = f"Triton's proton lowering is NVIDIA's; stamps here are {self.support.stamper.code_format}"
        return why_not

    def _uninstall(self):
        while self._undo:
            self._undo.pop()()

    def release(self):
        self._use.release(self._uninstall)

    def free(self):
        """Frees the ring a finished session kept (device memory, pinned mirror, stream, worker)."""
        with self._lock:
            if self._use.users == 0:
                _native().device_timer.device_timer_free()
                self.clock.forget()
                graph_replays.uninstall()
                self._graph_records = 0

    def attach_session(self, session):
        with self._lock:
            self._sessions.append(session)
            self.activity_changed()  # a new session is active: a paused route resumes
            session.state.counts_at_start = _ring_stats(_native())
            session.state.armed = self.armed
            if self._graph_records:  # torch may have been imported since the ring started
                graph_replays.install(_native(), unseen=self.untimed.graphs)
            session.state.stamped_at_start = compiler_hook.stats["stamped"]
            session.state.untimed_at_start = self.untimed.snapshot()
            if self.scopes is not None:
                self.scopes.scopes.attach_session(session)
                session.state.scoped_at_start = self.scopes.snapshot() | {"kernels": compiler_hook.stats["scoped"]}
            if session.hook == "triton":
                self._hook_triton(session, True)

    def detach_session(self, session):
        with self._lock:
            if session in self._sessions:
                self._sessions.remove(session)
            self.activity_changed()  # none active left: paused (until the route is taken down)
            if self.scopes is not None:
                self.scopes.scopes.detach_session(session)
            if session in self._hooked:
                self._hook_triton(session, False)

    def _hook_triton(self, session, on):
        """hook="triton" publishes a launch's metadata in Triton's launch-enter hook, which runs
        after the allocator: while such a session is open, launches take their context and
        metadata in the launch-exit hook (first in the chain, before hook="triton" drops them)."""
        native = _native()
        if on:
            if not self._hooked:
                self._undo_exit = attach(launch_hook_owner(), "launch_exit_hook", _launch_done, order="first")
                native.device_timer.device_timer_defer_launches(True)
            self._hooked.append(session)
            return
        self._hooked.remove(session)
        if not self._hooked:
            native.device_timer.device_timer_defer_launches(False)
            self._undo_exit()
            self._undo_exit = None

    # -- results ----------------------------------------------------------------------------
    @property
    def flush_off_thread(self):
        """A schedule's window is closed on the part writer's thread (its drain waits there for
        the copy of the ring), unless the flush has to stay on the caller's: kernel-side scopes
        are drained through Python, and a ring that took captured launches reads them back
        after a device-wide sync, which would end a capture the program begins meanwhile."""
        with self._lock:
            if not self._use.users:
                return True
            if compiler_hook.stats["scoped"]:
                return False
            return not _native().device_timer.device_timer_stats().get("graph_nodes", 0)

    def flush(self):
        with self._lock:
            if self._use.users:
                if self.scopes is not None:
                    self.scopes.scopes.drain()
                _native().device_timer.device_timer_events_drain()
                _native().device_timer.device_timer_drain()

    def session_outputs(self, session):
        native = _native()
        with self._lock:
            if not self._use.users:
                return {"time_source": self.name}
            scope_stats = self._scope_stats(session)
            native.device_timer.device_timer_events_drain()
            native.device_timer.device_timer_drain()
            now = _ring_stats(native)
            start = session.state.counts_at_start
            stats = {"time_source": self.name,
                     "device_timer_covers": "Triton kernels launched in the session (stamped at compile time "
                                            "or at their first launch; with mode events=on, else by CUDA events on the launch's stream: "
                                            "device_timer_event_timed_kernels); launches that got neither are "
                                            "counted in device_timer_not_timed_kernels; "
                                            "other kernels and copies are not seen",
                     "device_timer_options": self._options.canonical(), "device_timer_events": self.events_state,
                     "device_timer_stamps": f"{self.support.stamper.code_format} "
                                            f"(stage {self.support.stamper.stage!r}, target {self.support.facts.get('target')})"}
            stats.update({f"device_timer_{k}": v - start.get(k, 0) for k, v in now.items()})
            stats["device_timer_kernels_stamped"] = compiler_hook.stats["stamped"] - session.state.stamped_at_start
            stats["device_timer_kernels_not_stamped"] = list(compiler_hook.stats["not_stamped_kernels"])
            stats.update(scope_stats)
            stats.update(self.untimed.session_stats(session.state.untimed_at_start))
            stats.update(armed.session_facts(session.state.armed))
            stats.update(self.clock.facts(native))
        untimed.warn_ring_losses(stats, session)
        untimed.warn_graph_losses(stats, self._options, session)
        untimed.warn_untimed(stats, session)
        warn = lambda text: warnings.warn(text, RuntimeWarning, stacklevel=4)  # noqa: E731
        event_timed.warn_event_timed(stats, session, warn)
        unseen_graphs.warn_unlisted(stats, session, warn)
        return stats

    def _scope_stats(self, session):
        """The kernel-side scopes' part of the metadata (drains them: their kernel records go
        to the sessions before the ring's readback is waited for)."""
        stats = {"device_timer_scopes": self.scopes_state}
        if self.scopes is None:
            return stats
        stats.update(self.scopes.scopes.session_stats(session))
        start = session.state.scoped_at_start
        now = self.scopes.snapshot()
        stats.update({f"device_timer_{k}": v - start.get(k, 0) for k, v in now.items()})
        stats["device_timer_kernels_scoped"] = compiler_hook.stats["scoped"] - start.get("kernels", 0)
        return stats

    def device_info(self):
        devices = _cuda_devices()
        return device_info_of("CUDA", devices) if devices is not None else {}

    def describe(self):
        devices = [{"index": d["index"], "name": d["name"], "arch": d["arch"]} for d in _cuda_devices() or []]
        return {"backend": self.name, "time_source": self.name, "tracing_library": None,
                "cuda_driver_version": _cuda_driver_version(), "devices": devices}


def _cuda_devices():
    """The CUDA devices (the nvidia backend's list), or None where they cannot be listed."""
    try:
        from ..nvidia.backend import cuda_devices  # deferred: backend modules load when asked for

        return cuda_devices()
    except Exception:
        return None


def _ring_stats(native):
    """The ring's counts and the event-timed launches' (device_timer_event_*), as one dict."""
    return dict(native.device_timer.device_timer_stats()) | dict(native.device_timer.device_timer_event_stats())


def _launch_done(metadata):
    _native().device_timer.device_timer_launch_done()


def _kernel_loaded(module, function, name, metadata_group, hash_):
    """Triton's kernel_load_end_hook: a kernel from the disk cache gets its name registered
    (its stamps carry only a hash of it)."""
    _native().device_timer.device_timer_name_kernel(str(name))
