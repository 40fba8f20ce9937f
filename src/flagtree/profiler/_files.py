"""Atomic file writes: a temporary file in the target's folder, renamed over the target, so a
reader never sees half a file and a symlink planted at the target is replaced, not followed."""
import contextlib
import os
import tempfile


@contextlib.contextmanager
def atomic_output(path, mode="wb"):
    """with atomic_output(path) as out: out.write(...); the file appears complete or not at all."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as out:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(out.fileno(), 0o666 & ~umask)  # mkstemp makes 0600; give the usual mode
            yield out
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def write_atomic(path, data):
    with atomic_output(path, "wb" if isinstance(data, bytes) else "w") as out:
        out.write(data)
