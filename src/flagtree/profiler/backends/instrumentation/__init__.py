"""backend="instrumentation": intra-kernel timing of Triton and Gluon kernels.

Kernels compiled while a session is open get a clock read at each kernel-side scope boundary
(``flagtree.profiler.language``), written to a per-block profile buffer that the host reads back
in bulk (see pool.py: no device sync per launch). Kernel nodes come from CUPTI's activity stream,
as with backend="nvidia" (device time, launch geometry); each kernel node gets one child per
kernel-side scope with ``cycles`` (summed over warps and launches), ``normalized_cycles`` (cycles
per recording warp, averaged over launches) and ``count`` (scope entries). With data="trace" the
per-block, per-warp intervals go to ``<name>.device_scopes.json`` (Chrome trace format).
"""
from ..base import BackendUnavailable, SharedUse
from ..nvidia.backend import NvidiaBackend
from ...kernel_scopes import compiler_hook
from ...kernel_scopes.scopes import InstrumentationState, KernelScopes, new_device_buffer
from ...kernel_scopes import options as mode_options
from ...native_core import native
from ...triton_glue.kernels import set_profile_allocator


class InstrumentationBackend(NvidiaBackend):
    name = "instrumentation"
    mode_grammar = mode_options.MODE_GRAMMAR
    SessionState = InstrumentationState
    flush_off_thread = False  # its flush reads the kernel-side buffers through Python

    def __init__(self):
        super().__init__()
        self._use = SharedUse()
        self._lock = self._use.lock  # also guards the open sessions and the collector
        # Kernel nodes come from CUPTI: a launch is named by the correlation id its launch
        # callback gave (read on the launching thread, right after the launch call).
        self.scopes = KernelScopes(self.name, lambda launch_ns: native.instrumentation.instrumentation_take_correlation(),
                                   lambda session: session.state, new_buffer=lambda n: new_device_buffer(n))

    @property
    def collector(self):
        return self.scopes.collector

    @property
    def registry(self):
        return self.scopes.registry

    def _kernel_loaded(self, *args):
        self.scopes.kernel_loaded(*args)

    def _launch_exit(self, metadata):
        self.scopes.launch_exit(metadata)

    def options_from(self, parsed):
        return mode_options.options_from(parsed)

    def unavailable_reason(self):
        try:
            compiler_hook.triton_proton()
            compiler_hook.route()
        except BackendUnavailable as error:
            return str(error)
        return super().unavailable_reason()

    # -- starting and stopping ---------------------------------------------------------------
    def acquire(self, options):
        with self._lock:
            options_now = self.scopes.options
            if self._use.users and options != options_now:
                raise ValueError(f"backend 'instrumentation': a session with mode {options_now.canonical()!r} is "
                                 f"open; kernels are compiled with one set of options at a time, so another "
                                 f"session needs the same mode (got {options.canonical()!r})")
            self._use.acquire(lambda: self._start(options))

    def _start(self, options):
        compiler_hook.triton_proton()
        compiler_hook.route()
        super().acquire(None)
        try:
            native.instrumentation.instrumentation_watch_launches(True)
            try:
                self.scopes.install(options, set_profile_allocator)
            except BaseException:
                native.instrumentation.instrumentation_watch_launches(False)
                raise
        except BaseException:
            super().release()
            raise

    def release(self):
        self._use.release(self._stop)

    def _stop(self):
        try:
            self.scopes.stop()
        finally:
            native.instrumentation.instrumentation_watch_launches(False)
            super().release()

    def attach_session(self, session):
        self.scopes.attach_session(session)

    def detach_session(self, session):
        self.scopes.detach_session(session)

    # -- results ----------------------------------------------------------------------------
    def flush(self):
        self.scopes.drain()
        super().flush()

    def session_outputs(self, session):
        return self.scopes.session_stats(session)

    def describe(self):
        facts = super().describe()
        facts["backend"] = self.name
        return facts
