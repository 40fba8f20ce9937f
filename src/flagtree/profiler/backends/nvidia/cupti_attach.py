"""The release rule of the CUPTI subscription kept between sessions.

Subscribing to CUPTI and enabling its activity kinds is most of a session's fixed cost
(docs/performance.md, Session cost), so after the last session the native tracer stays attached
("parked": activity on, launch callbacks off, records discarded). It lets go, so that another
CUPTI client (Proton, torch.profiler, Nsight) can attach, on the first of:
  - flagtree.profiler.release();
  - FLAGTREE_PROFILER_CUPTI_IDLE_S seconds with no session (0: at every finalize);
  - interpreter exit;
  - a Proton session starting in this process (triton.profiler's start, wrapped once parked:
    Proton's cuptiSubscribe would otherwise fail with error 39 while we hold the slot).
The next session after a release subscribes afresh.

The same idle time suspends a tracer that sessions hold while none of them is active (quiet:
deactivated, a schedule between its windows): a quiet CUPTI still costs every launch until it is
finalized, so after FLAGTREE_PROFILER_CUPTI_IDLE_S seconds quiet the native tracer flushes the
sessions' records, unsubscribes and finalizes, and attaches again when a session becomes active
(csrc/backends/dialect/dialect_tracer_quiet.h). The clock is armed natively, at the switch off.
A schedule that knows its quiet stretch will be long does not wait for the clock
(suspend_if_quiet_for), and attaches again shortly before its window (attach_ahead). With no
session at all (an armed trigger between windows), a window known to be near is attached
ahead, parked, the same way (park_ahead). Every let-go between windows leaves device memory with
the CUDA driver, so a process makes at most FLAGTREE_PROFILER_CUPTI_LET_GO of them, then keeps
CUPTI attached between windows (let_go_between_windows, check_let_go)."""
import atexit
import functools
import os
import sys
import warnings

from ... import _env
from ...common.after_import import watch
from ...native_core import native

# A stretch let go attaches again this many attaches' time before its window (no less than
# MIN_LEAD_S), on the idle clock's thread, so that the window's first step only wakes it.
LEAD_ATTACHES = 3
MIN_LEAD_S = 0.02
# The suspend and the attach both run on the clock's thread, so the program pays CUPTI's cost only
# while attached: a quiet stretch known in advance is let go at its start when it lasts at least
# QUIET_LEADS times that lead (CUPTI then gone for half of it or more), and never when shorter than
# MIN_KNOWN_QUIET_S (which bounds how often CUPTI is finalized and initialized again).
QUIET_LEADS = 2
MIN_KNOWN_QUIET_S = 0.05
# Parked ahead of a trigger's window (no session held), CUPTI records every launch until the
# window: a shorter lead than a quiet attach's. A window that comes before the park is done waits
# for its rest, no longer than attaching itself would take.
PARK_LEAD_ATTACHES = 1.5

_exit_hook = [None]  # the pid that registered the exit hook
_exiting = [False]
_resume_failures_told = [0]
_idle_s = [_env.DEFAULT_CUPTI_IDLE_S]  # the idle time the sessions' start read (a step never reads the environment)
# Let-go's between windows (suspends, detaches at a trigger window's close): each leaves about
# 0.6 MB of device memory with the driver, so a process makes at most FLAGTREE_PROFILER_CUPTI_LET_GO
# of them (read at each start and window close); past it CUPTI stays attached between windows.
_let_go = {"most": _env.DEFAULT_CUPTI_LET_GO, "window_closes": 0, "told": False}


def before_acquire():
    """A session is about to take the tracer: the pending idle release is moot (a tracer that
    stays quiet restarts the clock). The idle time is read here, for the suspend too."""
    _cancel_idle_timer()
    _idle_s[0] = _env.cupti_idle_seconds()
    _let_go["most"] = _env.cupti_let_go()
    native.nvidia.cupti_suspend_after(-1.0 if _exiting[0] or _let_go_spent() else _idle_s[0])
    if _exit_hook[0] is None:
        _exit_hook[0] = os.getpid()
        atexit.register(_release_at_exit)


def _release_at_exit():
    # Sessions left open are finalized by session.py's exit hook, which runs after this one
    # (registered earlier): their release must then let go at once rather than park.
    _exiting[0] = True
    if os.getpid() != _exit_hook[0]:
        return  # a forked child exiting through atexit: the subscription is the parent's
    # No suspend while the sessions close: their finalize flushes, and the release lets go.
    native.nvidia.cupti_suspend_after(-1.0)
    release()


def after_release():
    """The nvidia backend released the tracer: if that was the last session it is parked now;
    start the idle clock (or release at once when the idle time is 0). The clock runs on a
    native thread (csrc/backends/nvidia/idle_release.h): starting a threading.Timer at every
    finalize would cost each finalize more."""
    stats = native.nvidia.cupti_attach_stats()
    _warn_of_resume_failures(stats["resume_failures"])
    if not stats["parked"]:
        return
    _release_before_proton()
    idle = 0 if _exiting[0] else _idle_s[0]
    if idle <= 0:
        release()
        return
    native.nvidia.cupti_idle_release_arm(idle)


def suspend_if_quiet_for(seconds):
    """A schedule went quiet, its next window `seconds` away (math.inf: none comes). The idle clock
    would suspend CUPTI after FLAGTREE_PROFILER_CUPTI_IDLE_S quiet, CUPTI costing every launch
    until then; a quiet known to outlast that, or to last well beyond the attach ahead of its
    window, is let go now, on the clock's thread. Returns how long before the window to attach
    again (attach_ahead), or None when it did not let go."""
    if _let_go_spent():
        _stay_attached()
        return None
    idle = 0.0 if _exiting[0] else _idle_s[0]
    lead = max(MIN_LEAD_S, LEAD_ATTACHES * _last_attach_s())
    if idle <= 0 or seconds < min(idle, max(MIN_KNOWN_QUIET_S, QUIET_LEADS * lead)):
        return None  # an idle time of 0 suspends at once already
    native.nvidia.cupti_idle_release_arm(0.0)
    return lead


def attach_ahead():
    """A window is near: a suspended CUPTI attaches again, quiet, on the idle clock's thread."""
    native.nvidia.cupti_attach_ahead()


def park_lead():
    """Seconds before a session with no other holding the tracer (an armed trigger's window) that
    park_ahead() should come: PARK_LEAD_ATTACHES attaches' time; None when the idle time is 0
    (CUPTI let go whenever no session runs, as asked) or no session has picked a library yet."""
    # No session is open to have read the idle time: read as the window's start will read it.
    if _exiting[0] or _env.cupti_idle_seconds() <= 0 or not native.nvidia.cupti_library() or _let_go_spent():
        return None  # spent: the tracer stays parked between windows, nothing to attach
    stats = native.nvidia.cupti_attach_stats()
    last = stats["last_park_ahead_ns"] / 1e9 or _last_attach_s()
    return max(MIN_LEAD_S, PARK_LEAD_ATTACHES * last)


def park_ahead():
    """A session is near and none holds the tracer: the library the last one used is attached
    again, parked, on the idle clock's thread, so that the session's start only resumes it; the
    clock lets it go after the idle time should none come. Nothing when park_lead() says no."""
    if park_lead() is None:
        return
    _release_before_proton()  # parked: a Proton session in between lets go first
    native.nvidia.cupti_park_ahead(native.nvidia.cupti_library(), _env.buffer_size(), _env.cupti_idle_seconds())


def let_go_between_windows():
    """A trigger's window closed, and no session holds the parked tracer: it is let go on the idle
    clock's thread (the detach's cuptiFinalize off the program's step), or, the let-go's spent,
    kept parked until the next window or disarm()."""
    if not native.nvidia.cupti_attach_stats()["parked"]:
        return  # another session holds it, or nothing is attached
    _let_go["most"] = _env.cupti_let_go()
    if _let_go_spent():
        _cancel_idle_timer()
        _tell_spent()
        return
    _let_go["window_closes"] += 1
    native.nvidia.cupti_idle_release_arm(0.0)


def check_let_go():
    """A session was activated or deactivated: past the let-go's, no suspend comes any more."""
    if _let_go_spent():
        _stay_attached()


def _let_go_spent():
    most = _let_go["most"]
    return most >= 0 and native.nvidia.cupti_attach_stats()["suspensions"] + _let_go["window_closes"] >= most


def _stay_attached():
    """No more suspends: the clock armed for one is stopped (it would only suspend: a session holds
    the tracer)."""
    native.nvidia.cupti_suspend_after(-1.0)
    _cancel_idle_timer()
    _tell_spent()


def _tell_spent():
    if not _let_go["told"]:
        _let_go["told"] = True
        warnings.warn(f"flagtree.profiler: CUPTI has been let go between windows as often as "
                      f"FLAGTREE_PROFILER_CUPTI_LET_GO allows ({_let_go['most']}; the CUDA driver keeps about 0.6 MB "
                      "of device memory each time); from now on it stays attached between windows: memory flat, "
                      "launches between windows pay CUPTI's attached cost (-1: no limit). backend=\"device_timer\" "
                      "times Triton kernels without CUPTI, with neither cost", stacklevel=4)


def _last_attach_s():
    stats = native.nvidia.cupti_attach_stats()
    return (stats["last_resume_ns"] or sum(stats["start_phases_ns"].values())) / 1e9


def _warn_of_resume_failures(failures):
    # A suspended tracer that another CUPTI client took meanwhile cannot attach again at wake: the
    # sessions then record nothing until a later wake finds CUPTI free.
    if failures > _resume_failures_told[0]:
        _resume_failures_told[0] = failures
        warnings.warn("flagtree.profiler: CUPTI was let go while the sessions were deactivated, and another "
                      "CUPTI client (torch.profiler, Proton, Nsight) held it when a session became active "
                      "again: launches made meanwhile were not recorded", stacklevel=4)


def _cancel_idle_timer():
    native.nvidia.cupti_idle_release_cancel()


def release():
    """Lets go of CUPTI now (unsubscribe and cuptiFinalize) so that another CUPTI client can
    attach in this process. Returns True if it released, False if there was nothing to release
    or a session is still running (finalize it first); the clock of a quiet session's suspend
    then keeps running."""
    released = bool(native.nvidia.cupti_detach())
    if released:
        _cancel_idle_timer()
    return released


# Where Proton's sessions start: the module's own `start` (its `profile` decorator calls it) and
# the package's re-export of it.
_PROTON_STARTS = ("triton.profiler.profile", "triton.profiler")


def _release_before_proton():
    """Wraps Proton's start to release our parked subscription first: now where it is imported,
    at its import (a finder on sys.meta_path) where it is not yet."""
    if "triton.profiler.profile" not in sys.modules:
        watch("triton.profiler.profile", _wrap_start)
    for name in _PROTON_STARTS:
        _wrap_start(sys.modules.get(name))


def _wrap_start(module):
    start = getattr(module, "start", None)
    if start is not None and not getattr(start, "_flagtree_releases_first", False):
        module.start = _releasing_first(start)


def _releasing_first(start):
    @functools.wraps(start)
    def start_after_release(*args, **kwargs):
        if native.nvidia.cupti_attach_stats()["parked"]:
            release()
        return start(*args, **kwargs)

    start_after_release._flagtree_releases_first = True
    return start_after_release

