"""Ctrl-C and SIGTERM in the commands that write files (the viewer's exports, --merge-traces):
both unwind as an exception, so the atomic writer removes its temporary file and the command
says one line and exits 130 / 143. SIGTERM's default action would end the process on the spot,
leaving the hidden temporary file behind; Ctrl-C's KeyboardInterrupt would print a traceback."""
import contextlib
import signal


class Stopped(BaseException):
    """A SIGTERM, raised where the program is (BaseException: no `except Exception` keeps going)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum, frame):
    raise Stopped(signum)


@contextlib.contextmanager
def stop_signals_unwind():
    """Within the block SIGTERM raises Stopped (outside the main thread, where no handler can be
    set, nothing changes)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_stopped)
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stopped_status(stop):
    """(exit status, words) of a KeyboardInterrupt or Stopped."""
    if isinstance(stop, Stopped):
        return 128 + stop.signum, "SIGTERM"
    return 128 + signal.SIGINT, "Ctrl-C"


def ignore_stop_signals():
    """Once stopping: a second signal must not cut the clean-up and the closing line short."""
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(number, signal.SIG_IGN)
        except ValueError:
            return
