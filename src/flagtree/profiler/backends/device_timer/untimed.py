"""Launches the device timer cannot time, counted by kernel name with the reason: never silently
absent from a session.

The ring sees a launch when the kernel's launcher asks Triton's profile allocator for its slot,
which only kernels compiled with the stamps do. Every other compiled kernel is caught at its
first launch in a session (triton_glue/launch_sight.py: ``CompiledKernel.run`` and inductor's
autotuners) and its launches counted here; the session's metadata lists them and finalize warns
once.
"""
import warnings

from ...triton_glue import launch_sight
from . import compiler_hook

NOT_STAMPED = ("compiled without the device timer's stamps (before the session, in another process, "
               "or loaded from a cache by a library): not timed")
STAMPING_FAILED = "its stamps could not be inserted at compile time (see the compile's warning): not timed"


def decide(kernel, launcher):
    """(launcher, reason): reason None when the launcher asks the profile allocator (the ring's slot)."""
    if launch_sight.profile_scratch_size(kernel) > 0:
        return launcher, None
    if getattr(kernel, "name", None) in compiler_hook.stats["not_stamped_kernels"]:
        return launcher, STAMPING_FAILED
    return launcher, NOT_STAMPED


class UntimedLaunches:
    """The sight of the device timer's backend while its route is installed."""

    def __init__(self):
        self.sight = None

    def install(self):
        self.sight = launch_sight.LaunchSight(decide)
        self.sight.install()

    def uninstall(self):
        if self.sight is not None:
            self.sight.uninstall()
            self.sight = None

    def snapshot(self):
        """{kernel name: launches counted} now (a session keeps the one at its start)."""
        if self.sight is None:
            return {}
        self.sight.see_inductor()  # torch's inductor may have been imported since the route went in
        return {name: count for name, (count, _) in self.sight.counts().items()}

    def session_stats(self, at_start):
        """The metadata's part: launches counted since `at_start` (a snapshot), by kernel name."""
        if self.sight is None:
            return {"device_timer_launches_not_timed": 0, "device_timer_not_timed_kernels": {}}
        kernels = {}
        for name, (count, reason) in sorted(self.sight.counts().items()):
            launches = count - at_start.get(name, 0)
            if launches:
                kernels[name] = {"launches": launches, "reason": reason}
        return {"device_timer_launches_not_timed": sum(k["launches"] for k in kernels.values()),
                "device_timer_not_timed_kernels": kernels,
                "device_timer_launch_doors": list(self.sight.doors)}


def warn_untimed(stats, session):
    """One warning a session: how many launches of which kernels got no device time."""
    kernels = stats.get("device_timer_not_timed_kernels") or {}
    if not kernels:
        return
    names = sorted(kernels, key=lambda name: -kernels[name]["launches"])
    shown = ", ".join(f"{name} ({kernels[name]['launches']})" for name in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    warnings.warn(f"flagtree.profiler: backend 'device_timer': {stats['device_timer_launches_not_timed']} launches "
                  f"of {len(names)} Triton kernels got no device time: {shown}{more}; each kernel's count and "
                  f"reason are in {session.metadata_path}", RuntimeWarning, stacklevel=5)
