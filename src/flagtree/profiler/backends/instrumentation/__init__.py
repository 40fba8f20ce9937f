"""backend="instrumentation": intra-kernel timing of Triton and Gluon kernels.

Kernels compiled while a session is open get a clock read at each kernel-side scope boundary
(``flagtree.profiler.language``), written to a per-block profile buffer that the host reads back
in bulk (see pool.py: no device sync per launch). Kernel nodes come from CUPTI's activity stream,
as with backend="nvidia" (device time, launch geometry); each kernel node gets one child per
kernel-side scope with ``cycles`` (summed over warps and launches), ``normalized_cycles`` (cycles
per recording warp, averaged over launches) and ``count`` (scope entries). With data="trace" the
per-block, per-warp intervals go to ``<name>.device_scopes.json`` (Chrome trace format).
"""
import json
import threading

from ..base import BackendUnavailable
from ...writers.device_scopes import write_device_scopes
from ..nvidia import NvidiaBackend
from . import compiler_hook
from .collector import MEAN_METRICS, Collector, scope_children, trace_events
from .kernel_info import kernel_info
from .options import FORMS, parse_mode
from .pool import ProfileBufferPool

DEFAULT_CLOCK_GHZ = 1.98  # H200 boost clock; used only when the device reports none


def _native():
    from ... import _native as native

    return native


class InstrumentationBackend(NvidiaBackend):
    name = "instrumentation"
    modes = FORMS

    def __init__(self):
        super().__init__()
        self._lock = threading.RLock()
        self._users = 0
        self._options = None
        self._undo = []
        self._sessions = {}  # slot -> session (open instrumentation sessions)
        self._trace_events = {}  # slot -> list of events (data="trace" sessions)
        self._left_out = {}
        self.registry = {}  # CUfunction handle -> KernelInfo, for every instrumented kernel loaded
        self.collector = None

    def check_mode(self, mode):
        return parse_mode(mode).canonical()

    def unavailable_reason(self):
        try:
            compiler_hook.triton_proton()
            compiler_hook.route()
        except BackendUnavailable as error:
            return str(error)
        return super().unavailable_reason()

    # -- starting and stopping ---------------------------------------------------------------
    def acquire(self, mode):
        options = parse_mode(mode)
        with self._lock:
            if self._users and options != self._options:
                raise ValueError(f"backend 'instrumentation': a session with mode {self._options.canonical()!r} is "
                                 f"open; kernels are compiled with one set of options at a time, so another "
                                 f"session needs the same mode (got {options.canonical()!r})")
            if self._users == 0:
                compiler_hook.triton_proton()
                compiler_hook.route()
                super().acquire(mode)
                try:
                    self._install(options)
                except BaseException:
                    self._uninstall()
                    super().release()
                    raise
            self._users += 1

    def _install(self, options):
        import torch
        from triton.runtime import _allocation

        from ...hooks.triton import _attach, _launch_hook_owner

        self._options = options
        native = _native()
        self.collector = Collector(ProfileBufferPool(options.pool_mb << 20, _new_device_buffer), self.registry,
                                   self._deliver, torch.cuda.synchronize)
        self.collector.slots = self._active_slots
        native.instrumentation_watch_launches(True)
        self._undo.append(lambda: native.instrumentation_watch_launches(False))
        compiler_hook.install(options)
        self._undo.append(compiler_hook.uninstall)
        previous = _allocation._profile_allocator.get()
        _allocation.set_profile_allocator(self.collector)
        self._undo.append(lambda: _allocation.set_profile_allocator(previous))
        import triton

        if not hasattr(triton.knobs.runtime, "kernel_load_end_hook"):
            raise BackendUnavailable(f"backend 'instrumentation' needs triton.knobs.runtime.kernel_load_end_hook "
                                     f"(Triton 3.5 or later); this is Triton {triton.__version__}")
        owner = _launch_hook_owner()
        self._undo.append(_attach(owner, "launch_exit_hook", self._launch_exit))
        self._undo.append(_attach(triton.knobs.runtime, "kernel_load_end_hook", self._kernel_loaded))

    def _uninstall(self):
        while self._undo:
            self._undo.pop()()

    def release(self):
        with self._lock:
            if self._users == 0:
                return
            self._users -= 1
            if self._users == 0:
                try:
                    if self.collector is not None:
                        self.collector.drain()
                finally:
                    self._uninstall()
                    if self.collector is not None:
                        self.collector.pool.release()
                    super().release()

    def attach_session(self, session):
        native = _native()
        native.session_enable_extras(session.slot)
        native.session_set_mean_metrics(session.slot, MEAN_METRICS)
        with self._lock:
            session.instrumentation_totals_at_start = dict(self.collector.totals.as_stats())
            self._sessions[session.slot] = session
            if session.data in ("trace", "perfetto"):
                self._trace_events[session.slot] = []
                self._left_out[session.slot] = 0

    def detach_session(self, session):
        with self._lock:
            self._sessions.pop(session.slot, None)
            self._trace_events.pop(session.slot, None)
            self._left_out.pop(session.slot, None)

    def _active_slots(self):
        native = _native()
        return tuple(slot for slot in self._sessions if native.session_is_active(slot))

    # -- Triton hooks ------------------------------------------------------------------------
    def _kernel_loaded(self, module, function, name, metadata_group, hash_):
        """Triton's kernel_load_end_hook: remember the layout and scope names of instrumented kernels."""
        try:
            info = _info_from_cache(name, metadata_group)
        except Exception as error:  # a kernel we cannot read is counted at drain, never fatal here
            import warnings

            warnings.warn(f"flagtree.profiler: instrumentation cannot read kernel {name}'s metadata: {error}",
                          RuntimeWarning, stacklevel=2)
            return
        if info is not None:
            self.registry[function] = info

    def _launch_exit(self, metadata):
        self.collector.on_launch_exit(metadata, _native().instrumentation_take_correlation())

    # -- results ----------------------------------------------------------------------------
    def flush(self):
        with self._lock:
            if self.collector is not None:
                self.collector.drain()
        super().flush()

    def _deliver(self, launch, info, records):
        native = _native()
        children = scope_children(info, records)
        metrics = [("dropped_scope_records", float(records.dropped_records))] if records.dropped_records else []
        for slot in launch.slots:
            if slot not in self._sessions:
                continue
            if launch.correlation:
                native.session_attach(slot, launch.correlation, metrics, children)
            if slot in self._trace_events:
                events, left_out = trace_events(info, records, f"{launch.name} (launch {launch.correlation})",
                                                self._clock_ghz(), max_blocks=16)
                self._trace_events[slot].extend(events)
                self._left_out[slot] += left_out

    def _clock_ghz(self):
        try:
            rate = _native().cuda_devices()[0]["clock_rate"]  # kHz
            return rate / 1e6 if rate else DEFAULT_CLOCK_GHZ
        except Exception:
            return DEFAULT_CLOCK_GHZ

    def session_outputs(self, session):
        with self._lock:
            if self.collector is not None:
                self.collector.drain()
            now = self.collector.totals.as_stats() if self.collector else {}
            start = getattr(session, "instrumentation_totals_at_start", {})
            stats = {k: v - start.get(k, 0) for k, v in now.items()}
            stats["instrumentation_options"] = self._options.canonical() if self._options else ""
            stats["instrumentation_route"] = compiler_hook.route()
            if session.slot in self._trace_events:
                path = session.name + ".device_scopes.json"
                write_device_scopes(path, self._trace_events[session.slot], self._clock_ghz())
                stats["device_scope_trace"] = path
                stats["device_scope_trace_blocks_left_out"] = self._left_out[session.slot]
            if stats.get("instrumentation_dropped_records"):
                import warnings

                warnings.warn(f"flagtree.profiler: {stats['instrumentation_dropped_records']} kernel-side scope "
                              f"records were overwritten in full per-block buffers; raise the instrumentation "
                              f"mode's buffer_size (counts in {session.metadata_path})", stacklevel=4)
            return stats

    def describe(self):
        facts = super().describe()
        facts["backend"] = self.name
        return facts


def _new_device_buffer(nbytes):
    import torch

    return torch.empty(nbytes, dtype=torch.uint8, device="cuda")


def _info_from_cache(name, metadata_group):
    """KernelInfo from the files Triton's cache keeps for a kernel (json metadata, ttgir, ptx)."""
    paths = dict(metadata_group or {})
    json_path = paths.get(f"{name}.json") or next(
        (p for f, p in paths.items() if f.endswith(".json") and not f.startswith("__grp__")), None)
    if json_path is None:
        return None
    with open(json_path) as handle:
        metadata = json.load(handle)
    if not metadata.get("profile_scratch_size"):
        return None
    asm = {}
    for ext in ("ttgir", "ptx"):
        path = paths.get(f"{name}.{ext}") or next((p for f, p in paths.items() if f.endswith("." + ext)), None)
        if path:
            with open(path) as handle:
                asm[ext] = handle.read()
    mode = metadata.get("instrumentation_mode", "")
    options = parse_mode(mode.split(":", 1)[1] if mode.startswith("flagtree-instrumentation:") else "")
    return kernel_info(name, metadata, asm, options)
