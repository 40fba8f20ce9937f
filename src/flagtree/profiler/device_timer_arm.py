"""``arm_device_timer()``, ``disarm_device_timer()`` and FLAGTREE_PROFILER_DEVICE_TIMER_ARM: the
device_timer route installed with no session open, so that CUDA graphs captured before the first
session carry stamps and descriptors and their replays are timed in later sessions
(backends/device_timer/armed.py). Nothing here imports Triton until the route is armed."""
import warnings

from . import _env
from .backends import get_backend
from .distributed import ranks

VARIABLE = "FLAGTREE_PROFILER_DEVICE_TIMER_ARM"


def arm_device_timer(mode=None):
    """Installs the device_timer route now, idle until a session is active (it starts the ring,
    which initializes CUDA in this process). `mode` as start(backend="device_timer", mode=...):
    sessions opened while armed must use the same one. True when it armed now, False when it
    was armed already with this mode, None when the process does not profile
    (FLAGTREE_PROFILER_DISABLE, _RANKS)."""
    if ranks.profiling_off():
        return None
    return get_backend("device_timer").arm(mode)


def disarm_device_timer():
    """Lets the armed route go (with no session open: taken down and its ring freed; else the
    route goes with the last session's finalize, the ring kept as after any session): True if it
    was armed."""
    if ranks.profiling_off():
        return False
    return get_backend("device_timer").disarm()


def arm_from_environment():
    """At the package's import: arms the route where FLAGTREE_PROFILER_DEVICE_TIMER_ARM asks for it.
    Where it cannot run here (no CUDA driver or GPU, a Triton without the hooks, Triton's
    interpreter, a bad mode) it warns and goes on: importing the package never fails for it."""
    wanted, mode = _env.device_timer_arm()
    if not wanted or ranks.profiling_off():
        return None
    try:
        return get_backend("device_timer").arm(mode, by=VARIABLE)
    except Exception as error:
        warnings.warn(f"flagtree.profiler: {VARIABLE}={_env.text(VARIABLE)!r}: the device_timer route is not "
                      f"armed: {type(error).__name__}: {error}", RuntimeWarning, stacklevel=3)
        return None
