"""What an armed trigger (trigger.py) watches, at no cost to a launch: a signal whose handler
only counts, a file whose modification time is read at a low rate, and the wake-up pipe of the
trigger's watcher thread.

The signal handler counts and writes one byte to the pipe, nothing else: Python runs it on the
main thread between two bytecodes of whatever that thread was doing (inside a launch, holding a
lock), so it takes no lock and opens nothing; the watcher thread or the next step() acts on the
count. It is not chained to a handler the program had: a signal the program already handles is
refused at arm(), since each signal would then both profile and do what the program means by it.
"""
import os
import select
import signal
import threading
import time

# How often the watcher (and step(), at most) reads a file trigger's modification time.
FILE_POLL_S = 0.5


class Waker:
    """A pipe the watcher thread sleeps on: a signal handler or disarm() writes a byte to wake it."""

    def __init__(self):
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def wake(self):
        try:
            os.write(self._write, b"\0")
        except OSError:  # full (a wake-up is pending anyway) or closed (disarmed)
            pass

    def wait(self, timeout):
        """Sleeps until woken or `timeout` seconds (None: until woken) pass."""
        select.select([self._read], [], [], timeout)
        try:
            while os.read(self._read, 512):
                pass
        except OSError:  # empty
            pass

    def close(self):
        for fd in (self._read, self._write):
            os.close(fd)


class SignalSource:
    """Counts deliveries of one signal; take() says how many arrived since the last take()."""

    poll_s = None  # the watcher needs no timer: the handler wakes it

    def __init__(self, signum, waker):
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("a signal trigger must be armed from the main thread (Python runs signal handlers there)")
        current = signal.getsignal(signum)
        left = getattr(current, "__self__", None)
        if isinstance(left, SignalSource) and left._closed:
            # A source disarmed off the main thread could not put its signal back: its inert
            # handler is no handler of the program's, and what it replaced is put back at close.
            current = left._previous
        if current not in (signal.SIG_DFL, signal.SIG_IGN):
            raise ValueError(f"{signal.Signals(signum).name} already has a handler in this program ({current!r}): "
                             f"arm another signal (signal:USR2, signal:HUP) or a file trigger")
        self.signum, self._waker = signum, waker
        self._fired = 0  # written only by the handler
        self._taken = 0
        self._closed = False
        signal.signal(signum, self._handler)
        self._previous = current

    def _handler(self, signum, frame):
        if self._closed:  # left installed by a close() off the main thread: its pipe may be gone
            return
        self._fired += 1
        self._waker.wake()

    def quiet(self):
        """No delivery since the last take() (a test without a lock: the handler only adds)."""
        return self._fired == self._taken

    def take(self, due=False):
        fired = self._fired  # read once: the handler may run between two bytecodes here
        new, self._taken = fired - self._taken, fired
        return new

    def close(self):
        self._closed = True  # first: off the main thread the handler stays installed (signal.signal refuses)
        if threading.current_thread() is threading.main_thread() and signal.getsignal(self.signum) == self._handler:
            signal.signal(self.signum, self._previous)


def _mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


class FileSource:
    """A file's modification time: a change (the file touched, or created) is one trigger;
    removing it is none. Read when due: every FILE_POLL_S, or when the caller says so."""

    poll_s = FILE_POLL_S

    def __init__(self, path):
        self.path = path
        self._seen = _mtime(path)
        self._checked = time.monotonic()

    def quiet(self):
        """Nothing to read yet: the last read was less than FILE_POLL_S ago."""
        return time.monotonic() - self._checked < FILE_POLL_S

    def take(self, due=False):
        """1 if the file changed since the last read; reads only when `due` or FILE_POLL_S passed."""
        now = time.monotonic()
        if not due and now - self._checked < FILE_POLL_S:
            return 0
        self._checked = now
        found = _mtime(self.path)
        changed = found is not None and found != self._seen
        self._seen = found
        return 1 if changed else 0

    def close(self):
        pass
