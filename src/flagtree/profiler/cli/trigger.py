"""flagtree-profiler --trigger: the target runs armed and idle (trigger.py); each trigger opens a
window, written as one part when it closes; the open window is written when the target ends,
however it ends. The command's last lines say what the windows wrote."""
import os
import signal

from .. import session as _session
from .. import trigger as _trigger
from ..distributed import ranks
from . import target as target_runner
from .finish import install_sigterm, wrote_line
from .interpret import maybe_use_interpreter
from .interrupted_write import WriteInterrupted, abandon_the_write
from .output import message, say

NOTE = ("the script's own start() and finalize() defer to the command's trigger: its windows are sessions of "
        "their own (start() returns -1; step() still counts steps)")


def run(options, kind, target, args, name, disabled_reason):
    """Runs the target armed; returns the exit status. `disabled_reason()` words why a process
    that does not profile (FLAGTREE_PROFILER_DISABLE, _RANKS) runs without."""
    set_options = dict(name=options.name or name, context=options.context, data=options.data,
                       backend=options.backend, mode=options.mode, hook=options.hook)
    try:  # checked, and the signal handler installed, before the target runs
        armed = _arm(options, set_options, disabled_reason)
    except ValueError as error:
        say(f"error: {message(error)}")
        return 2
    why = maybe_use_interpreter(options)
    if why is not None and armed is not None:
        say(f"TRITON_INTERPRET=1 was set for the script ({'-b interpreter' if why == 'chosen' else 'no GPU driver found'}): "
            f"Triton's interpreter runs its kernels on the CPU, with host-measured kernel times")
    previous = install_sigterm()
    try:
        code = target_runner.run_profiled(kind, target, args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return _finish(armed, code)


def _arm(options, set_options, disabled_reason):
    """The Armed run, begun; None (said why) when this process does not profile."""
    if ranks.profiling_off():
        say(disabled_reason())
        return None
    armed = _trigger.begin(_trigger.check(options.trigger, options.window, set_options))
    _session.defer_to_trigger(NOTE)
    say(f"armed, idle until {armed.trigger} (window: {armed.window or 'the step range'}); "
        f"each window is written as one part")
    return armed


def _finish(armed, code):
    """Writes the open window (a second Ctrl-C or a SIGTERM abandons that write) and says what
    the windows wrote."""
    try:
        previous = {n: signal.signal(n, abandon_the_write) for n in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # main() called outside the main thread
        previous = {}
    try:
        _trigger.disarm()
    except WriteInterrupted as stop:
        _session.discard_command_session()
        what = "Ctrl-C" if stop.signum == signal.SIGINT else "SIGTERM"
        # The writer thread may not have written every closed window yet: only what is there.
        landed = [path for path in armed.files if os.path.exists(path)]
        say(f"{what} while the open window was written: abandoned; wrote {', '.join(landed) or 'nothing'}")
        return 128 + stop.signum
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        _session.finalize_command_session()
    if armed is not None:
        _say_written(armed)
    return code


def _say_written(armed):
    ignored = f"; {armed.ignored_triggers} triggers came during a window and were ignored" if armed.ignored_triggers else ""
    failed = armed.failed_windows
    lost = f"; {failed} window{'s' if failed != 1 else ''} not written (warned above; metadata: failed_windows)"
    if not armed.files:
        say(f"{armed.trigger} opened no window: nothing was written{ignored}" if not failed
            else f"{armed.trigger}: nothing was written{lost}{ignored}")
        return
    by_kind = {}
    for path in armed.files:
        by_kind.setdefault(path[path.rindex("."):], []).append(path)
    count = len(armed.windows)
    if failed:  # `windows` lists a window whose write failed too
        say(f"{count} window{'s' if count != 1 else ''} recorded{lost}{ignored}")
    else:
        say(f"{count} window{'s' if count != 1 else ''} written{ignored}")
    for files in by_kind.values():
        say(wrote_line(files))
