"""While no device-timer session is active, JITFunction.run launches as with no profiler loaded.

With the compiler route installed, Triton's JITFunction.run calls the stages inspection hook at
every launch (for its cache-key part) and picks the stamped kernel, whose launcher then asks the
profile allocator for a slot. Nothing is recorded while every device-timer session is
deactivated (deactivate(), a schedule between its windows), so the two knobs the route sets
(the stages hook and ``instrumentation_mode``, triton_glue/stages.py) are put back to what they
were before it was installed: Triton launches the plain kernel again (both binaries stay in its
cache). They are set again when a session becomes active, and for the length of every CUDA graph
capture (graph_replays.py calls ``capture``), so that captured launches carry the stamps and get
their descriptors as in an active session. Kernels stamped at their first launch
(launch_sight.py: library-held kernels, kernels compiled before the session) launch their own
plain launcher again too: ``CompiledKernel.run`` is Triton's own property while paused. Inductor's
autotuners keep the launchers they were given at their first run; those ask the allocator, which
hands out no slot while nothing is active.
"""
import threading

from ...triton_glue import stages as triton_stages


class CompilePause:
    def __init__(self, before, ours, doors=None):
        """`before`, `ours`: triton_stages.compiler_knobs() before the route's install and after;
        `doors(paused)`: pauses or resumes the launch doors too (launch_sight.LaunchSight.pause)."""
        self.before, self.ours, self.doors = before, ours, doors
        self.lock = threading.Lock()
        self.active = True  # a session is active (the state the route was installed in)
        self.captures = 0  # CUDA graph captures under way
        self.paused = False

    def set_active(self, active):
        with self.lock:
            self.active = active
            self._apply()

    def capture(self, begins):
        """A capture begins (True) or ends (False), on any thread."""
        with self.lock:
            self.captures = max(0, self.captures + (1 if begins else -1))
            self._apply()

    def _apply(self):
        pause = not self.active and not self.captures
        if pause == self.paused:
            return
        if pause and triton_stages.compiler_knobs() != self.ours:
            return  # someone changed the knobs since: leave them (and the stamps) in place
        triton_stages.set_compiler_knobs(self.before if pause else self.ours)
        if self.doors is not None:
            self.doors(pause)
        self.paused = pause
