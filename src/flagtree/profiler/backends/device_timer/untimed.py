"""Launches of compiled Triton kernels that were not compiled with the device timer's stamps:
stamped at their first launch in a session, or counted by kernel name with the reason, never
silently absent from a session.

The ring sees a launch when the kernel's launcher asks Triton's profile allocator for its slot,
which only kernels compiled with the stamps do. Every other compiled kernel is caught at its
first launch in a session (triton_glue/launch_sight.py: ``CompiledKernel.run`` and inductor's
autotuners): its code kept in ``CompiledKernel.asm`` is stamped as the compiler hook stamps it,
built again and loaded (triton_glue/restamp.py), and its callers' launches go to the stamped copy.
A kernel that cannot be stamped so has its launches counted by kernel name, or with mode
``events=on`` timed by CUDA events on their stream (event_timed.py) where it can be; the session's
metadata lists both and finalize warns once for each.
"""
import threading
import warnings
import weakref

from ...common import timer_tags
from ...kernel_scopes.options import options_from_compiler_mode
from ...native_core import native
from ...triton_glue import launch_sight, restamp
from . import compiler_hook, event_timed, stampers, unseen_graphs
from .slot_launch import slot_launcher

NOT_STAMPED = ("compiled without the device timer's stamps (before the session, in another process, "
               "or loaded from a cache by a library): not timed")
NOT_RESTAMPED = "compiled without the device timer's stamps and not stamped at its first launch"
RETIRED_STAMPS = ("carries the stamps of an earlier flagtree.profiler version (kept in Triton's or inductor's "
                  "cache), which the ring gives no slot: not timed; clear those caches to have it compiled anew")
OTHER_SCRATCH = "compiled with another tool's instrumentation, which has its own profile scratch memory: not timed"


def _with_profile_scratch(kernel, launcher):
    """(launcher, reason) for a kernel whose launcher asks Triton's profile allocator: timed as it
    is when it carries this version's stamps (the ring's slot) or kernel-side scopes (their
    buffers' header stamps); otherwise it gets no time from the ring, and says why."""
    metadata = getattr(kernel, "metadata", None)
    align = getattr(metadata, "profile_scratch_align", None)
    if align == timer_tags.current():
        return slot_launcher(launcher), None
    if align in timer_tags.retired():
        return launcher, RETIRED_STAMPS
    mode = getattr(metadata, "instrumentation_mode", None)
    if mode is None or options_from_compiler_mode(mode) is not None:
        return launcher, None  # kernel-side scopes, or metadata that cannot say: taken as timed
    return launcher, OTHER_SCRATCH


class FirstSightStamps:
    """Stamps a compiled kernel at its first launch with the ring's stamps (the compiler hook's
    parameters); each kernel's stamped launcher is kept while its kernel lives."""

    def __init__(self, native, plane_bytes, lanes, records, stamper):
        self.native, self.stamper = native, stamper
        self.params = (plane_bytes, lanes, records)
        self._copies = weakref.WeakKeyDictionary()  # kernel -> its stamped launch or runner, or why it has none
        self._lock = threading.Lock()
        self.count = 0  # kernels stamped here

    def _edit(self, text, metadata):
        name = self.stamper.kernel_name(text)
        stamped = self.stamper.stamp(text, self.native.device_timer.device_timer_name_kernel(name), *self.params)
        metadata["profile_scratch_size"] = compiler_hook.SCRATCH_BYTES
        metadata["profile_scratch_align"] = timer_tags.current()
        return stamped

    def _stamped(self, kernel, build):
        """build() for `kernel` once while it lives (the stamped launch or runner); NotRestampable
        saying why there is none."""
        with self._lock:
            known = self._copies.get(kernel)
            if known is None:
                try:
                    known = build()
                    self.count += 1
                except (restamp.NotRestampable, stampers.NotStampable) as error:
                    known = f"{NOT_RESTAMPED}: {error}"
                except Exception as error:  # the target's toolchain or driver refused the stamped copy
                    known = f"{NOT_RESTAMPED}: {type(error).__name__}: {str(error)[:200]}"
                self._copies[kernel] = known
        if isinstance(known, str):
            raise restamp.NotRestampable(known)
        return known

    def _stamped_launch(self, kernel):
        binary, metadata = restamp.edited_binary(kernel, self.stamper.stage, self._edit)
        return restamp.load_launcher(kernel, binary, metadata)

    def _stamped_static_runner(self, static):
        code = restamp.static_kernel_code(static)
        return restamp.static_runner(static, *restamp.edited_binary(code, self.stamper.stage, self._edit))

    def decide(self, kernel, launcher, kind):
        """(launcher, reason) for launch_sight: timed as it is, timed through a stamped copy, or
        counted with the reason."""
        if launch_sight.profile_scratch_size(kernel) > 0:
            return _with_profile_scratch(kernel, launcher)
        # A kernel whose stamps failed at compile time fails here again, and is counted with why.
        try:
            if kind == "inductor-static":
                runner = self._stamped(kernel, lambda: self._stamped_static_runner(kernel))
                return restamp.redirect_inductor_launcher(launcher, runner), None
            stamped = self._stamped(kernel, lambda: self._stamped_launch(kernel))
        except restamp.NotRestampable as error:
            return launcher, str(error)
        if kind == "inductor":
            return restamp.redirect_to_stamped(launcher, stamped), None
        return stamped, None


def decide_without_stamping(kernel, launcher, kind):
    """(launcher, reason) where kernels are not stamped at first sight: timed as it is or counted."""
    if launch_sight.profile_scratch_size(kernel) > 0:
        return _with_profile_scratch(kernel, launcher)
    return launcher, NOT_STAMPED


class UntimedLaunches:
    """The sight of the device timer's backend while its route is installed."""

    def __init__(self):
        self.sight = None
        self.stamps = None  # FirstSightStamps of the ring's stamps, kept while their parameters hold
        self.events = None  # event_timed.EventTimed while unstampable launches are event-timed
        self.graphs = unseen_graphs.UnseenGraphs()  # replays of graphs captured before the ring

    def install(self, native=None, plane_bytes=0, lanes=0, records=0, stamper=None, events=None):
        """With the ring's stamp parameters (`stamper` not None): kernels are stamped at first
        sight; without: they are counted. `events` (an EventTimed): launches of kernels that
        cannot be stamped are timed by events instead of only counted."""
        decide = decide_without_stamping
        if stamper is not None:
            params = (native, plane_bytes, lanes, records, stamper)
            if self.stamps is None or (self.stamps.native, *self.stamps.params, self.stamps.stamper) != params:
                self.stamps = FirstSightStamps(*params)
            decide = self.stamps.decide
        self.events = self.graphs.events = events
        self.sight = launch_sight.LaunchSight(decide, fallback=events.wrap if events is not None else None)
        self.sight.install()

    def uninstall(self):
        if self.sight is not None:
            self.sight.uninstall()
            self.sight = None
        self.graphs.events = None  # replays between sessions are counted, not timed

    def snapshot(self):
        """{kernel name: launches counted} now, and the kernels stamped at first sight under
        "<stamped>" (a session keeps the one at its start)."""
        if self.sight is None:
            return {}
        self.sight.see_inductor()  # torch's inductor may have been imported since the route went in
        counts = {name: count for name, (count, _) in self.sight.counts().items()}
        events = self.events.counts() if self.events is not None else {}
        return counts | {"<stamped>": self.stamps.count if self.stamps else 0, "<events>": events,
                         "<graphs>": self.graphs.counts()}

    def session_stats(self, at_start):
        """The metadata's part since `at_start` (a snapshot): launches counted and launches event-timed,
        by kernel name."""
        if self.sight is None:
            return {"device_timer_launches_not_timed": 0, "device_timer_not_timed_kernels": {},
                    "device_timer_kernels_stamped_at_first_launch": 0, "device_timer_event_timed_kernels": {}}
        kernels = {}
        for name, (count, reason) in sorted(self.sight.counts().items()):
            launches = count - at_start.get(name, 0)
            if launches:
                kernels[name] = {"launches": launches, "reason": reason}
        events = self.events.counts() if self.events is not None else {}
        timed, untimed = event_timed.session_stats(events, at_start.get("<events>", {}))
        graphs, replayed = unseen_graphs.session_stats(self.graphs.counts(), at_start.get("<graphs>"))
        for name, entry in [*untimed.items(), *replayed.items()]:  # a name counted twice keeps the first reason
            known = kernels.setdefault(name, {"launches": 0, "reason": entry["reason"]})
            known["launches"] += entry["launches"]
        stamped = (self.stamps.count if self.stamps else 0) - at_start.get("<stamped>", 0)
        return graphs | {"device_timer_launches_not_timed": sum(k["launches"] for k in kernels.values()),
                         "device_timer_not_timed_kernels": kernels,
                         "device_timer_kernels_stamped_at_first_launch": stamped,
                         "device_timer_event_timed_kernels": timed,
                         "device_timer_launch_doors": list(self.sight.doors)}


def warn_ring_losses(stats, session):
    """One warning a session: launches that got a ring slot, or should have, and no device time."""
    lost = sum(stats.get(f"device_timer_{k}", 0) for k in (
        "untimed", "captured_untimed", "other_device_untimed", "graph_replays_untimed", "scoped_launches_untimed"))
    if lost:
        warnings.warn(f"flagtree.profiler: backend 'device_timer': {lost} launches have no device time "
                      f"(captured into a CUDA graph where the stamps have no graph path, as the LLVM IR "
                      f"stamps have none, or with the graph area full; another device; a launch that did "
                      f"not run; or a scoped kernel whose buffers lack their stamps; counts in "
                      f"{session.metadata_path})", RuntimeWarning, stacklevel=5)


def warn_untimed(stats, session):
    """One warning a session: how many launches of which kernels got no device time."""
    kernels = stats.get("device_timer_not_timed_kernels") or {}
    if not kernels:
        return
    shown = event_timed.busiest(kernels, 5, ", ", lambda name, entry: f"{name} ({entry['launches']})")
    warnings.warn(f"flagtree.profiler: backend 'device_timer': {stats['device_timer_launches_not_timed']} launches "
                  f"of {len(kernels)} Triton kernels got no device time: {shown}; each kernel's count and "
                  f"reason are in {session.metadata_path}", RuntimeWarning, stacklevel=5)


def warn_graph_losses(stats, options, session):
    lost = stats.get("device_timer_graph_replays_lost", 0)
    if lost:
        warnings.warn(f"flagtree.profiler: backend 'device_timer': {lost} CUDA graph replays were not timed: "
                      f"more than {options.graph_replays - 1} replays of a captured launch between two "
                      f"readbacks (flush() reads back; or raise mode 'graph_replays=<n>'); counts in "
                      f"{session.metadata_path}", RuntimeWarning, stacklevel=5)
    skipped = stats.get("device_timer_graph_readbacks_skipped", 0)
    if skipped:
        warnings.warn(f"flagtree.profiler: backend 'device_timer': {skipped} readbacks of CUDA graph replays "
                      f"were put off while a capture was open (its replays are read at the next one)",
                      RuntimeWarning, stacklevel=5)
