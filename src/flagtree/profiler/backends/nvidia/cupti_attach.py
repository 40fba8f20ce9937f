"""The release rule of the CUPTI subscription kept between sessions.

Subscribing to CUPTI and enabling its activity kinds is most of a session's fixed cost
(docs/performance.md, Session cost), so after the last session the native tracer stays attached
("parked": activity on, launch callbacks off, records discarded). It lets go, so that another
CUPTI client (Proton, torch.profiler, Nsight) can attach, on the first of:
  - flagtree.profiler.release();
  - FLAGTREE_PROFILER_CUPTI_IDLE_S seconds with no session (0: at every finalize);
  - interpreter exit.
The next session after a release subscribes afresh."""
import atexit
import os

from ... import _env
from ...native_core import native

_exit_hook = [None]  # the pid that registered the exit hook
_exiting = [False]


def before_acquire():
    """A session is about to take the tracer: the pending idle release is moot."""
    _cancel_idle_timer()
    if _exit_hook[0] is None:
        _exit_hook[0] = os.getpid()
        atexit.register(_release_at_exit)


def _release_at_exit():
    # Sessions left open are finalized by session.py's exit hook, which runs after this one
    # (registered earlier): their release must then let go at once rather than park.
    _exiting[0] = True
    if os.getpid() != _exit_hook[0]:
        return  # a forked child exiting through atexit: the subscription is the parent's
    release()


def after_release():
    """The nvidia backend released the tracer: if that was the last session it is parked now;
    start the idle clock (or release at once when the idle time is 0). The clock runs on a
    native thread (csrc/backends/nvidia/idle_release.h): starting a threading.Timer at every
    finalize would cost each finalize more."""
    if not native.nvidia.cupti_attach_stats()["parked"]:
        return
    idle = 0 if _exiting[0] else _env.cupti_idle_seconds()
    if idle <= 0:
        release()
        return
    native.nvidia.cupti_idle_release_arm(idle)


def _cancel_idle_timer():
    native.nvidia.cupti_idle_release_cancel()


def release():
    """Lets go of CUPTI now (unsubscribe and cuptiFinalize) so that another CUPTI client can
    attach in this process. Returns True if it released, False if there was nothing to release
    or a session is still running (finalize it first)."""
    _cancel_idle_timer()
    return bool(native.nvidia.cupti_detach())
