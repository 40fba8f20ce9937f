"""Progress on stderr for commands that can run long (a 1,000,000-node report takes seconds):
once a command has run FIRST_AFTER seconds, a line every INTERVAL seconds says which step it is
in and for how long; nothing at all when stderr is not a terminal (pipes, logs, tests), so no
output a script reads changes.

    with progress.running("flagtree-profiler-viewer"):
        progress.step("reading run.hatchet")
        ...
"""
import contextlib
import sys
import threading
import time

FIRST_AFTER = 2.0
INTERVAL = 2.0
_current = [None]  # the command's Progress, read by step() from wherever the work is


class Progress:
    def __init__(self, command, stream, first_after=FIRST_AFTER, interval=INTERVAL):
        self.command, self.stream = command, stream
        self.began = time.monotonic()
        self.what = "starting"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(first_after, interval), daemon=True,
                                        name="flagtree-profiler-progress")
        self._thread.start()

    def _run(self, first_after, interval):
        wait = first_after
        while not self._stop.wait(wait):
            self._line(f"{self.what} ({time.monotonic() - self.began:.0f} s so far)")
            wait = interval

    def _line(self, text):
        try:
            self.stream.write(f"{self.command}: {text}\n")
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the work goes on
            self._stop.set()

    def stop(self):
        self._stop.set()
        self._thread.join()


def _is_terminal(stream):
    try:
        return bool(stream is not None and stream.isatty())
    except (OSError, ValueError, AttributeError):
        return False


@contextlib.contextmanager
def running(command, stream=None, **timing):
    """Progress lines for the block's duration when `stream` (default stderr) is a terminal."""
    stream = sys.stderr if stream is None else stream
    if not _is_terminal(stream) or _current[0] is not None:
        yield None
        return
    _current[0] = Progress(command, stream, **timing)
    try:
        yield _current[0]
    finally:
        _current[0].stop()
        _current[0] = None


def step(what):
    """Names the step the running command is in (a no-op when no progress is shown)."""
    current = _current[0]
    if current is not None:
        current.what = what
