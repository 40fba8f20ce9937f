"""Kernel-side scopes (``flagtree.profiler.language``) in a device_timer session, with no CUPTI.

The scopes themselves are the shared kernel_scopes package's (kernel_scopes/scopes.py: Triton's
proton passes, the buffer pool, the drain): a kernel with scopes gets ``cycles``,
``normalized_cycles`` and ``count`` children per scope, and with data="trace" its intervals go
to ``<name>.device_scopes.json``. Such a kernel uses the profile scratch pointer for its scope
buffers, so it takes no ring slot and the PTX stamper leaves it alone; what times it is its own
buffers: each block's header carries global-timer stamps (block start; after its final copy).
Here each such launch gets a correlation id of the device timer's (native, at launch exit, on the
launching thread: its context as for a ring launch), and at the drain a kernel record whose start
is the earliest block's start stamp and whose end the latest block's end stamp, mapped to the
profile clock with the ring's probed offset. A launch whose blocks lack the stamps (a Triton whose
header has none) or whose buffers are bad gets no made-up time: it is counted untimed.

Triton's launch hooks do not carry the grid's shape: the record's grid is the launch's number of
blocks (in x), its block the kernel's warps x 32 threads.
"""
import threading
from dataclasses import dataclass

from ..base import BackendUnavailable
from ...kernel_scopes import compiler_hook as scope_compiler_hook
from ...kernel_scopes.scopes import KernelScopes
from ...kernel_scopes.options import InstrumentationOptions
from ...native_core import native as _native

COUNTS = ("scoped_launches_timed", "scoped_launches_untimed")


def scope_options():
    """The scopes' compile options in a device_timer session: the instrumentation backend's
    defaults, with Triton-language kernels instrumented too (every Triton kernel is timed here;
    a user who wrote scopes into one wants them)."""
    return InstrumentationOptions(triton=True)


def unavailable_reason():
    """None when this Triton can compile kernel-side scopes, else why not."""
    try:
        scope_compiler_hook.triton_proton()
        scope_compiler_hook.route()
    except BackendUnavailable as error:
        return str(error)
    return None


@dataclass
class ScopedCounts:
    scoped_launches_timed: int = 0
    scoped_launches_untimed: int = 0


class DeviceTimerScopes:
    def __init__(self, native=None, **kernel_scopes):
        """`kernel_scopes`: KernelScopes' new_buffer/synchronize (the CPU tests' host memory)."""
        self.native = native or _native
        self.scopes = KernelScopes("device_timer", self._correlate, lambda session: session.state.scopes,
                                   deliver_record=self._record, on_unread=self._untimed, trace_file_always=False,
                                   **kernel_scopes)
        self.counts = ScopedCounts()
        self._lock = threading.Lock()

    @property
    def mode(self):
        """The scopes' instrumentation_mode, while installed."""
        return self.scopes.options.compiler_mode() if self.scopes.options else None

    def install(self, options, fallback):
        """Compiles scopes in; the collector becomes the device timer allocator's fallback (the
        allocator keeps ring slots for stamped kernels and forwards every other request) in
        place of `fallback` (the profile allocator before the ring's), put back on stop."""

        def behind_ring_allocator(collector):
            self.native.device_timer.device_timer_set_fallback(collector)
            return lambda: self.native.device_timer.device_timer_set_fallback(fallback)

        self.scopes.install(options, behind_ring_allocator)

    def _correlate(self, launch_ns):
        return self.native.device_timer.device_timer_scoped_launch(launch_ns)

    def _record(self, launch, info, summary):
        times = summary.device_time()
        if times is None or not launch.correlation:
            self._untimed(launch)
            return
        blocks = launch.piece.size // info.layout.stride
        self.native.device_timer.device_timer_scoped_record(launch.correlation, launch.name, times[0], times[1],
                                                            (blocks, 1, 1), (info.layout.num_warps * 32, 1, 1),
                                                            launch.stream)
        with self._lock:
            self.counts.scoped_launches_timed += 1

    def _untimed(self, launch):
        if launch.correlation:
            self.native.device_timer.device_timer_forget_launch(launch.correlation)
        with self._lock:
            self.counts.scoped_launches_untimed += 1

    def stop(self):
        self.scopes.stop()

    def snapshot(self):
        with self._lock:
            return {k: getattr(self.counts, k) for k in COUNTS}
