"""Kernel-side scopes (``flagtree.profiler.language``) of the kernels launched while installed,
for whichever backend gives their kernel nodes: backend="instrumentation" (nodes from CUPTI) and
backend="device_timer" (nodes from the scoped kernels' own buffer headers, no CUPTI).

Installed, it puts Triton's proton passes at the compiler's instrumentation point
(compiler_hook.py), hands each launch of an instrumented kernel a slice of a device buffer pool
(pool.py; the owner decides where the collector sits in the profile allocator chain), pairs the
slice with its launch in Triton's launch-exit hook on the launching thread (the owner's
`correlate` names the launch), and at a drain (one device sync: flush, finalize, a full pool)
decodes every block's buffer (device_reduce.py) and delivers one child per scope to the kernel
node (``session_attach``). An owner that delivers the kernels' records itself (the device timer)
does so through `deliver_record`, after the launch's scope children are attached: they wait for
their record, so its sessions keep no kernel node per correlation for them.
"""
import json
import os
import threading
import warnings
from dataclasses import dataclass, field

from .. import launch_log
from ..common import timer_tags
from ..native_core import native
from ..paths import side_file
from ..writers.device_scopes import write_device_scopes
from ..triton_glue import versions
from ..triton_glue.launch_hooks import attach, attach_kernel_load_hook, launch_hook_owner
from ..backends.base import BackendUnavailable
from . import compiler_hook
from .options import options_from_compiler_mode
from .pool import ProfileBufferPool

DEFAULT_CLOCK_GHZ = 1.98  # H200 boost clock; used only when the device reports none
LAUNCH_LOG_USER = "kernel_scopes"  # this module's name for the session's launch log (launch_log.py)
MEAN_METRICS = ["normalized_cycles"]  # averaged, not summed, when launches merge into one node


@dataclass
class InstrumentationState:
    """Per session (kept in the session's state, see `state_of`): the collector's totals when it
    started (its metadata counts the difference) and, for data="trace", the device-scope events
    gathered for ``<name>.device_scopes.json``."""
    totals_at_start: dict = field(default_factory=dict)
    trace_events: list = None  # None for data="tree"
    trace_launches: list = field(default_factory=list)  # (correlation, first event, end) per launch
    blocks_left_out: int = 0


class KernelScopes:
    def __init__(self, owner, correlate, state_of, deliver_record=None, on_unread=None, new_buffer=None,
                 synchronize=None, trace_file_always=True):
        """`correlate(launch_ns)`: the launch's correlation id, on the launching thread at launch
        exit (0 if unknown). `state_of(session)`: the session's InstrumentationState (a part of
        its backend's session state). `deliver_record(launch, info, summary)`: the owner's
        delivery of the launch's kernel record, after its scope children (None: another part
        of the backend delivers the records, before or after them, as CUPTI does).
        `on_unread(launch)` for a launch whose kernel is unknown (its buffers cannot be read).
        `new_buffer(nbytes)`, `synchronize()`: device memory and the drain's sync (default:
        torch CUDA). `trace_file_always`: a trace session writes
        its device-scope trace even when none of its launches had scopes (False: only then, as
        for the device timer, where most sessions launch no scoped kernel)."""
        self.owner = owner
        self._trace_file_always = trace_file_always
        self._correlate = correlate
        self._state_of = state_of
        self._deliver_record = deliver_record
        self._on_unread = on_unread
        self._new_buffer = new_buffer
        self._synchronize = synchronize
        self.lock = threading.RLock()
        self.options = None
        self.registry = {}  # CUfunction handle -> KernelInfo, for every instrumented kernel loaded
        self.collector = None
        self._sessions = {}  # session id -> session (open sessions)
        self._undo = []
        self._installed = False
        self._unhook_exit = None  # undoes the launch-exit hook, once it is in

    # -- installing --------------------------------------------------------------------------
    def install(self, options, place_collector):
        """Compiler hook, launch-exit and kernel-load hooks; `place_collector(collector)` puts the
        collector into the profile allocator chain and returns the undo."""
        import torch  # deferred: torch is heavy and optional

        from .collector import Collector  # deferred: numpy, needed once kernels load

        if not versions.has_kernel_load_hook():
            raise BackendUnavailable(f"backend {self.owner!r}: kernel-side scopes need "
                                     f"triton.knobs.runtime.kernel_load_end_hook (Triton 3.5 or later); "
                                     f"this is Triton {versions.triton_version()}")
        try:
            self.options = options
            new_buffer = self._new_buffer or new_device_buffer
            self.collector = Collector(ProfileBufferPool(options.pool_mb << 20, new_buffer), self.registry,
                                       self._deliver, self._synchronize or torch.cuda.synchronize)
            self.collector.sessions = self._active_sessions
            self.collector.unread = self._on_unread
            compiler_hook.install(options)
            self._undo.append(compiler_hook.uninstall)
            self._undo.append(place_collector(self.collector))
            self._undo.append(self._unhook_launch_exit)
            with self.lock:
                self._installed = True
                if self.registry:  # instrumented kernels loaded in an earlier session launch again
                    self._hook_launch_exit()
            self._undo.append(attach_kernel_load_hook(self.kernel_loaded))
        except BaseException:
            self.uninstall()
            raise

    def uninstall(self):
        with self.lock:
            self._installed = False
        while self._undo:
            self._undo.pop()()

    def _hook_launch_exit(self):
        """Puts launch_exit into Triton's launch-exit hook, which pairs an instrumented kernel's
        buffer slice with its launch. Every launch pays for a hook in the chain (a Python call
        per launch: docs/reference/device-timer.md measures it), so it goes in only once an
        instrumented kernel is known: at its load, which Triton runs before that first launch
        reads the hook. Called under self.lock."""
        if self._installed and self._unhook_exit is None:
            # First in the exit chain: hook="triton" drops the launch's metadata in its own exit.
            self._unhook_exit = attach(launch_hook_owner(), "launch_exit_hook", self.launch_exit, order="first")

    def _unhook_launch_exit(self):
        with self.lock:
            undo, self._unhook_exit = self._unhook_exit, None
        if undo is not None:
            undo()

    def stop(self):
        """Reads back what is left, then takes everything down."""
        try:
            if self.collector is not None:
                self.collector.drain()
        finally:
            self.uninstall()
            if self.collector is not None:
                self.collector.pool.release()

    # -- sessions ----------------------------------------------------------------------------
    def attach_session(self, session):
        native.session.session_set_mean_metrics(session.slot, MEAN_METRICS)
        with self.lock:
            if self.registry:  # instrumented kernels known already: their launches get scopes
                self._join_extras(session)
            state = self._state_of(session)
            state.totals_at_start = dict(self.collector.totals.as_stats())
            if session.data in ("trace", "perfetto"):
                state.trace_events = []
                # the host context of each launch, for the events' call_stack (read at finalize
                # when the session had scoped launches), kept from the session's start beside any
                # other reader of the session's log (tianshu's launch_log=on): launch_log.py.
                launch_log.keep(session, LAUNCH_LOG_USER)
            self._sessions[session.id] = session

    def detach_session(self, session):
        with self.lock:
            self._sessions.pop(session.id, None)
        launch_log.let_go(session, LAUNCH_LOG_USER)  # a session closed before its finalize read it

    def _active_sessions(self):
        open_now = tuple(self._sessions.values())  # one snapshot: sessions may open and close meanwhile
        return tuple(s for s in open_now if native.session.session_is_active(s.slot))

    # -- Triton hooks ------------------------------------------------------------------------
    def kernel_loaded(self, module, function, name, metadata_group, hash_):
        """Triton's kernel_load_end_hook: remember the layout and scope names of instrumented kernels."""
        try:
            info = _info_from_cache(name, metadata_group)
        except Exception as error:  # a kernel we cannot read is counted at drain, never fatal here
            warnings.warn(f"flagtree.profiler: backend {self.owner!r} cannot read kernel {name}'s metadata: "
                          f"{error}", RuntimeWarning, stacklevel=2)
            return
        if info is not None:
            self.know_kernel(function, info)

    def know_kernel(self, function, info):
        """An instrumented kernel is loaded (before its first launch): its launches' scope buffers
        are collected from now on, and every open session joins their scopes to the launches'
        records. Joining costs every record a look-up (and where the records may come first,
        a kernel node kept per correlation, which grows with the launches), so it is switched on
        only once a kernel has scopes to give (most sessions have none)."""
        with self.lock:
            self.registry[function] = info
            self._hook_launch_exit()
            for session in self._sessions.values():
                self._join_extras(session)

    def _join_extras(self, session):
        """The session joins the scopes' children to their launches' records, which come after
        them where the owner delivers the records (deliver_record), else in any order."""
        native.session.session_enable_extras(session.slot, after_records=self._deliver_record is None)

    def launch_exit(self, metadata):
        self.collector.on_launch_exit(metadata, self._correlate)

    # -- results ----------------------------------------------------------------------------
    def drain(self):
        with self.lock:
            if self.collector is not None:
                self.collector.drain()

    def _deliver(self, launch, info, summary, trace_records):
        """One launch's results to the sessions that saw it: per-scope totals (reduced where the
        buffers are) for the tree, and for trace sessions the intervals of its first blocks."""
        from .collector import TRACE_BLOCKS, scope_children, trace_events  # deferred: numpy, needed once kernels load

        children = scope_children(info, summary.as_summary())
        metrics = [("dropped_scope_records", float(summary.dropped_records))] if summary.dropped_records else []
        records = None
        for session in launch.sessions:
            if self._sessions.get(session.id) is not session:
                continue  # closed since the launch
            state = self._state_of(session)
            if launch.correlation:
                native.session.session_attach(session.slot, launch.correlation, metrics, children)
            if state.trace_events is not None:
                records = records if records is not None else trace_records()
                events, _ = trace_events(info, records, f"{launch.name} (launch {launch.correlation})",
                                         self.clock_ghz())
                first = len(state.trace_events)
                state.trace_events.extend(events)
                state.trace_launches.append((launch.correlation, first, len(state.trace_events)))
                state.blocks_left_out += max(0, summary.good_blocks - TRACE_BLOCKS)
        if self._deliver_record is not None:
            self._deliver_record(launch, info, summary)

    def clock_ghz(self):
        try:
            from ..backends.nvidia.backend import cuda_devices  # deferred: backend modules load when asked for

            rate = cuda_devices()[0]["clock_rate"]  # kHz; cached, asked once per launch in trace mode
            return rate / 1e6 if rate else DEFAULT_CLOCK_GHZ
        except Exception:
            return DEFAULT_CLOCK_GHZ

    def session_stats(self, session):
        """The session's metadata: scope counts since it started, options, its device-scope trace."""
        with self.lock:
            if self.collector is not None:
                self.collector.drain()
            state = self._state_of(session)
            now = self.collector.totals.as_stats() if self.collector else {}
            start = state.totals_at_start
            stats = {k: v - start.get(k, 0) for k, v in now.items()}
            stats["instrumentation_options"] = self.options.canonical() if self.options else ""
            stats["instrumentation_route"] = compiler_hook.route()
            if state.trace_events is not None:
                stats.update(self._write_trace(session, state))
        if stats.get("instrumentation_dropped_records"):
            warnings.warn(f"flagtree.profiler: {stats['instrumentation_dropped_records']} kernel-side scope "
                          f"records were overwritten in full per-block buffers; raise the instrumentation "
                          f"mode's buffer_size (counts in {session.metadata_path})", stacklevel=5)
        return stats

    def _write_trace(self, session, state):
        """A trace session's device-scope trace and its metadata. Without a scoped launch the
        launch log is not read, and (unless `trace_file_always`) nothing is written: the
        metadata's path is None and a file of that name from an earlier run is removed, so none
        stands beside this trace."""
        path = side_file(session.name, "device_scopes")
        if state.trace_launches:  # only scoped launches have events to give a call stack
            add_call_stacks(state, native.session.launch_log_entries(session.slot))
        launch_log.let_go(session, LAUNCH_LOG_USER)  # read once, or not needed: another user may keep it
        if not state.trace_launches and not self._trace_file_always:
            try:
                os.unlink(path)
            except OSError:  # none there (the common case), or not ours to remove
                pass
            return {"device_scope_trace": None, "device_scope_trace_blocks_left_out": 0}
        write_device_scopes(path, state.trace_events, self.clock_ghz())
        return {"device_scope_trace": path, "device_scope_trace_blocks_left_out": state.blocks_left_out}


def add_call_stacks(state, log):
    """Gives each trace event ``args.call_stack`` as Proton's instrumentation traces have it: the
    names of the launch's context from the tree's root down (``ROOT``, scopes or Python frames),
    then the kernel. `log`: the session's launch log (native.session.launch_log_entries), where
    the launch's record landed; a launch without a record there (correlation unknown, record
    lost) gets none rather than a made-up context."""
    stacks = {}
    for correlation, name, kind, path in zip(log["correlation"], log["name"], log["kind"], log["path"]):
        if kind != "kernel" or correlation in stacks:
            continue  # the first record of a correlation is its launch (a graph replays it)
        names = [step[1] for step in path]
        if not path or path[-1][0] != "kernel":  # trace sessions log the context node, not the kernel
            names.append(name)
        stacks[correlation] = ["ROOT"] + names
    for correlation, first, end in state.trace_launches:
        stack = stacks.get(correlation) if correlation else None
        if stack is not None:
            for event in state.trace_events[first:end]:
                event["args"]["call_stack"] = stack


def new_device_buffer(nbytes):
    """`nbytes` of CUDA device memory (torch), the pool's default buffer."""
    import torch  # deferred: torch is heavy and optional

    return torch.empty(nbytes, dtype=torch.uint8, device="cuda")


def _info_from_cache(name, metadata_group):
    """KernelInfo from the files Triton's cache keeps for a kernel (json metadata, ttgir, ptx)."""
    from .kernel_info import kernel_info  # deferred: numpy, needed once kernels load
    paths = dict(metadata_group or {})
    json_path = paths.get(f"{name}.json") or next(
        (p for f, p in paths.items() if f.endswith(".json") and not f.startswith("__grp__")), None)
    if json_path is None:
        return None
    with open(json_path) as handle:
        metadata = json.load(handle)
    if not metadata.get("profile_scratch_size"):
        return None
    if metadata.get("profile_scratch_align") in timer_tags.any_version():
        return None  # the device timer's ring slot (stamps), not scope buffers
    options = options_from_compiler_mode(metadata.get("instrumentation_mode", ""))
    if options is None:
        return None  # profile scratch of another instrumentation
    asm = {}
    for ext in ("ttgir", "ptx"):
        path = paths.get(f"{name}.{ext}") or next((p for f, p in paths.items() if f.endswith("." + ext)), None)
        if path:
            with open(path) as handle:
                asm[ext] = handle.read()
    return kernel_info(name, metadata, asm, options)
