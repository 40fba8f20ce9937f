"""A signal while flagtree-profiler writes the profile: the rest of the write is abandoned, and
one line says what is on disk and what is not."""
import os
import signal


class WriteInterrupted(BaseException):
    """Ctrl-C or SIGTERM while the profile is written: the write is abandoned (BaseException, so
    that no `except Exception` on the way keeps writing)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def abandon_the_write(signum, frame):
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_IGN)  # the clean-up that follows runs to its end
    raise WriteInterrupted(signum)


def identities(opened):
    """{path: (device, inode) or None} of the files the write replaces, as they are before it."""
    if opened is None:
        return {}
    return {path: _identity(path) for path in (opened.output_path, opened.metadata_path)}


def _identity(path):
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def interrupted_line(opened, signum, before):
    what = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
    if opened is None:
        return f"{what}: stopped (profiling was disabled: nothing to write)"
    # A native writer runs to its end before the signal's handler: its file may be in place
    # (renamed over the name: a new inode) though the session never noted it. Say what is on disk.
    landed = [p for p, old in before.items() if p not in opened.written and _identity(p) not in (None, old)]
    # parts the writer thread had written (one it still held when the signal came is not there)
    parts = [j.path for j in opened.part_jobs if j.finished and j.error is None and j.path not in opened.written]
    written = parts + opened.written + landed
    missing = []
    if not any(p != opened.metadata_path for p in written):
        missing.append("the last part" if opened.parts else opened.output_path)
    if opened.metadata_path not in written:
        missing.append(opened.metadata_path)
    return (f"{what} while the profile was written: the rest of the write was abandoned; wrote "
            f"{', '.join(written) or 'nothing'}; not written: {', '.join(missing) or 'nothing'}")
