"""backend="tianshu": Iluvatar CoreX ("Tianshu"), stand-in tested only (no Iluvatar hardware run).

Kernel times come from one of two sources, chosen when the first session starts (``time_source``
in the metadata, with ``time_source_reason``):

* ``device_timer``: where Triton's build for the target supports the device_timer route (its
  compiler calls the stages inspection hook, its launcher passes a profile scratch pointer, a
  stamper exists for its code: device_timer/route.py) and the route's ring starts on the device,
  Triton kernels carry global-timer stamps and their DEVICE times reach the session as on
  backend="device_timer" (Triton kernels only).
* ``host`` otherwise (as before): each Triton launch is recorded with its context through
  Triton's launch hooks (enter: the start time, exit: the end time, then ``record_host_kernel``
  with device type COREX). Every time is a HOST time (the launch call's duration, not the
  kernel's) and every kernel node (and trace event) carries the metric ``host_timed_launches``.
  Kernels run by Triton's interpreter (TRITON_INTERPRET=1, which calls no launch hooks) are
  recorded the same way.

``time_source=auto`` (the default) picks the first that works, ``time_source=device_timer``
makes a session fail with the reason when the route cannot run, ``time_source=host`` keeps host
times.

Mode (the vendor grammar, backends/mode.py): ``vendor_metrics=launch_stats,occupancy,instruction,memory``
(the ixKN sections wanted; the ``--ixkn`` wrapper passes them as ``--section``),
``ixkn_import_path=<csv or .ixkn-rep>`` (import an ixKN run's CSV into this session's kernel
nodes at finalize), ``launch_log=on`` (write ``<name>.launches.json`` for an import after the run;
the wrapper sets it), ``device_id=<n>``, ``time_source=auto|device_timer|host`` (above), ``kernel_scopes=on`` (kernel-side scopes through the
instrumentation backend's compiler route; a clear error naming what Triton's build lacks).
"""
import os
import threading
from dataclasses import dataclass

from ..base import Backend, BackendUnavailable, LaunchHooks, SharedUse
from .corex import corex_detected
from ..mode import Option, vendor_grammar, vendor_mode
from ...native_core import native
from ... import _env, launch_log
from ...triton_glue.interpreter import install_launch, run_beneath
from ...triton_glue.kernels import interpreter_module
from ...triton_glue.launch_hooks import launch_hook_owner
from ...triton_glue.target import compiler_backends, interpreter_active
from ...vendor_import import attach_in_session, session_launches
from . import ixkn_import
from ...paths import side_file
from ...writers.atomic import write_json

DEVICE_TYPE_COREX = 5
METRICS = ("launch_stats", "occupancy", "instruction", "memory")
HOST_TIMED = "host_timed_launches"


TIME_SOURCES = ("auto", "device_timer", "host")
MODE_GRAMMAR = vendor_grammar(METRICS, (Option("ixkn_import_path"),
                                        Option("launch_log", "switch", spelled=("true", "false")),
                                        Option("device_id", "int"),
                                        Option("kernel_scopes", "switch", spelled=("true", "false")),
                                        Option("time_source", "choice", choices=TIME_SOURCES)))


@dataclass
class TianshuState:
    """Per session: the device_timer backend's view of it, when kernels are device-timed."""
    device_view: object = None


class DeviceTimerView:
    """A tianshu session as the device_timer backend sees it: the same session (name, slot,
    data kind, hook, ...), with the device timer's own per-session state in place of tianshu's."""

    def __init__(self, session, state):
        self._session = session
        self.state = state

    def __getattr__(self, name):
        return getattr(self._session, name)


def parse_mode(mode):
    """The VendorMode of a tianshu mode string (None: the default one)."""
    return vendor_mode(MODE_GRAMMAR.parse(mode, "tianshu"))


def kernel_scope_route():
    """Raises BackendUnavailable naming what Triton's build lacks for kernel-side scopes on CoreX."""
    from ...kernel_scopes import compiler_hook  # deferred: only kernel_scopes=on loads the kernel-side scopes

    try:
        compiler_hook.triton_proton()  # the proton dialect's passes
    except BackendUnavailable as error:
        raise BackendUnavailable(f"backend 'tianshu': kernel_scopes needs Triton's proton dialect: {error}") from None
    try:
        compilers = compiler_backends()
    except ImportError as error:
        raise BackendUnavailable(f"backend 'tianshu': kernel_scopes needs triton.backends: {error}") from None
    corex = next((compilers[k] for k in ("corex", "iluvatar") if k in compilers), None)
    if corex is None:
        raise BackendUnavailable(f"backend 'tianshu': kernel_scopes needs Triton's CoreX compiler backend "
                                 f"(triton.backends 'corex' or 'iluvatar'); this build has {sorted(compilers)}")
    raise BackendUnavailable("backend 'tianshu': kernel_scopes: Triton's CoreX backend is present, but reading "
                             "the per-block scope buffers back on CoreX is not implemented (no hardware to "
                             "validate it); use backend='instrumentation' on NVIDIA")


class TianshuBackend(Backend):
    name = "tianshu"
    SessionState = TianshuState
    # Host times come from Triton's launch hooks (none while the device timer times kernels). The
    # exit hook is first in its chain: the launch is recorded before hook="triton" drops its
    # metadata.
    launch_hooks = LaunchHooks(enter="_enter", exit="_exit", exit_order="first", prepare="_host_timed")

    def __init__(self):
        self._use = SharedUse()
        self._undo = []
        self._local = threading.local()
        self._streams = {}
        self.device_id = 0
        self._original_run = None
        self.time_source = "host"
        self.time_source_reason = ""
        self._device_timer = None  # the device_timer backend, while kernels are device-timed

    @property
    def time_source_kind(self):
        """Sessions take the device timer's launches while kernels are device-timed."""
        return "device_timer" if self.time_source == "device_timer" else "tracer"

    def unavailable_reason(self):
        try:
            launch_hook_owner()
        except RuntimeError as error:
            return str(error)
        return None

    mode_grammar = MODE_GRAMMAR

    def options_from(self, parsed):
        """The mode as a VendorMode (kept as session.options), the default one without a mode."""
        options = vendor_mode(parsed)
        if options.options.get("kernel_scopes"):
            kernel_scope_route()
        return options

    # -- recording launches --------------------------------------------------------------------
    def acquire(self, options):
        wanted = (options or parse_mode(None)).options.get("time_source", "auto")

        def install():
            self.device_id = (options or parse_mode(None)).options.get("device_id", 0)
            self._choose_time_source(wanted)
            if self.time_source == "host":
                self._install()

        with self._use.lock:
            if self._use.users and wanted not in ("auto", self.time_source):
                raise ValueError(f"backend 'tianshu': time_source={wanted} asked for, but the open tianshu "
                                 f"sessions take {self.time_source} times ({self.time_source_reason})")
            self._use.acquire(install)

    def _choose_time_source(self, wanted):
        """Device times from the device_timer route where it runs, else host times (the reason kept)."""
        self.time_source, self._device_timer = "host", None
        if wanted == "host":
            self.time_source_reason = "time_source=host was asked for"
            return
        from .. import get_backend  # deferred: the device_timer backend loads when asked for

        device_timer = get_backend("device_timer")
        try:
            device_timer.acquire(device_timer.check_mode(None))
        except (BackendUnavailable, RuntimeError, ValueError) as error:
            device_timer.free()  # a ring that started before a later step failed (frees only when unused)
            if wanted == "device_timer":
                raise BackendUnavailable(f"backend 'tianshu': time_source=device_timer: {error}") from None
            self.time_source_reason = f"the device_timer route cannot run here: {error}"
            return
        self.time_source, self._device_timer = "device_timer", device_timer
        facts = device_timer.support.facts
        self.time_source_reason = (f"Triton's build for target {facts.get('target')} supports the device_timer route "
                                   f"(stamps in stage {facts.get('stamped_stage')!r})")

    def release(self):
        self._use.release(self._uninstall)

    def _uninstall(self):
        while self._undo:
            self._undo.pop()()
        if self._device_timer is not None:
            self._device_timer.release()
            self._device_timer = None

    def flush(self):
        if self._device_timer is not None:
            self._device_timer.flush()

    def _host_timed(self):
        """Whether the declared launch hooks go in: only while kernels are host-timed."""
        return self.time_source == "host"

    def _install(self):
        try:
            launch_hook_owner()
        except RuntimeError as error:
            raise BackendUnavailable(f"backend 'tianshu': {error}") from None
        if interpreter_active():
            self._patch_interpreter()

    def _enter(self, metadata):
        stack = getattr(self._local, "starts", None)
        if stack is None:
            stack = self._local.starts = []
        # The kernel's own name, read now: hook="triton" evaluates launch_metadata after this hook,
        # and Triton then merges its "name" into the same dict (the rename reaches the record
        # through the native launch metadata; vendor rows match the kernel's own name).
        stack.append((native.core.monotonic_ns(), self._own_name(metadata)))

    def _exit(self, metadata):
        end = native.core.monotonic_ns()
        stack = getattr(self._local, "starts", None)
        if not stack:
            return  # the enter hook ran before this backend was installed
        start, name = stack.pop()
        data = self._data(metadata)
        self._record(name, start, end, (0, 0, 0), (0, 0, 0), self._stream_id(data.get("stream")))

    @staticmethod
    def _data(metadata):
        return getattr(metadata, "data", None) or (metadata if isinstance(metadata, dict) else {})

    def _own_name(self, metadata):
        return str(self._data(metadata).get("name") or "<unknown kernel>")

    def _stream_id(self, handle):
        """Small stream numbers in order of first use (Triton hands over the raw handle)."""
        key = handle if isinstance(handle, int) else 0
        if key not in self._streams:
            self._streams[key] = len(self._streams)
        return self._streams[key]

    def _record(self, name, start, end, grid, block, stream):
        native.session.record_host_kernel(name, start, end, grid, block, DEVICE_TYPE_COREX, self.device_id, stream)

    def _patch_interpreter(self):
        interpreter = interpreter_module()
        backend = self

        def wrap(original):
            def run(fn_self, *args, grid, warmup, **kwargs):
                if warmup:
                    return original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
                start = native.core.monotonic_ns()
                result, record = run_beneath(original, fn_self, args, grid, warmup, kwargs)
                end = native.core.monotonic_ns()
                if not record:  # recorded beneath (the interpreter backend's): once for every session
                    return result
                dims = tuple(getattr(interpreter.interpreter_builder, "grid_dim", None) or (0, 0, 0))
                backend._record(fn_self.fn.__name__, start, end, dims, (0, 0, 0), 0)
                return result

            return run

        undo = install_launch(wrap)
        self._undo.append(undo)

    # -- sessions --------------------------------------------------------------------------------
    def attach_session(self, session):
        native.session.session_enable_extras(session.slot)  # the host-time label and imports join by correlation
        launch_log.keep(session, self.name)  # its launches for imports and launch_log=on
        if self._device_timer is not None:
            # The device_timer backend keeps its per-session counts in a state of its own.
            view = DeviceTimerView(session, self._device_timer.SessionState())
            session.state.device_view = view
            self._device_timer.attach_session(view)

    def activity_changed(self):
        if self._device_timer is not None:  # its route pauses while none of its sessions is active
            self._device_timer.activity_changed()

    def detach_session(self, session):
        if session.state.device_view is not None and self._device_timer is not None:
            self._device_timer.detach_session(session.state.device_view)
        launch_log.let_go(session, self.name)

    def session_outputs(self, session):
        launches = session_launches(session.slot)
        if session.state.device_view is not None and self._device_timer is not None:
            stats = self._device_timer.session_outputs(session.state.device_view)
        else:
            for launch in launches:
                native.session.session_attach(session.slot, launch.correlation, [(HOST_TIMED, 1.0)])
            stats = {"time_source": "host", HOST_TIMED: len(launches)}
        stats["time_source_reason"] = self.time_source_reason
        mode = session.options or parse_mode(None)
        options = mode.options
        if options.get("launch_log"):
            stats["launch_log"] = write_launch_log(session)
        if options.get("ixkn_import_path"):
            stats.update(self._import(session, mode, launches))
        return stats

    def _import(self, session, mode, launches):

        path = mode.options["ixkn_import_path"]
        parsed, result = ixkn_import.import_csv(ixkn_import.read_input(path, _env.ixkn_cli()), launches,
                                                pid=os.getpid())
        attach_in_session(session.slot, session.data, result)
        return ixkn_import.write_vendor_json(side_file(session.name, "vendor"), parsed, result, launches,
                                             requested=mode.vendor_metrics, raw_inputs=[path])

    def device_info(self):
        return {"COREX": {str(self.device_id): {"arch": "corex", "num_sms": 0, "clock_rate": 0,
                                                "memory_clock_rate": 0, "bus_width": 0}}}

    def describe(self):
        if self.time_source == "device_timer":
            note = ("Iluvatar CoreX: kernel times are DEVICE times of Triton kernels, from global-timer stamps "
                    "the device_timer route inserts at compile time (other kernels are not seen). Stand-in tested only.")
        else:
            note = ("Iluvatar CoreX: kernel times are HOST times (launch call durations, from Triton's launch "
                    "hooks); CoreX gives no device timestamps in process. Stand-in tested only.")
        return {"backend": self.name, "time_source": self.time_source, "corex_detected": corex_detected(),
                "note": note}


def write_launch_log(session):
    """`<name>.launches.json`: the session's launch log (with each launch's node path), for an
    import after the run."""

    path = side_file(session.name, "launch_log")
    write_json(path, {"pid": os.getpid(), "data": session.data,
                             "columns": native.session.launch_log_entries(session.slot)})
    return path
