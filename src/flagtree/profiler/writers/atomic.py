"""The one way Python-side outputs reach the disk: the text goes to a temporary file in the
target's folder and is renamed over the target once whole, so an interruption (Ctrl-C, SIGTERM,
SIGKILL, a crash, a full disk) leaves the previous file or none, never a truncated one, and a
symlink planted at the target is replaced rather than followed. JSON is strict: NaN and
infinities are written as null. (Native outputs do the same in csrc/dump/out_file.cpp.)

fsync: only with FLAGTREE_PROFILER_FSYNC=1 (sync_wanted), each file before its rename. The rename
already gives the guarantee above against anything that stops the process; an fsync adds it only
against a power loss or a kernel crash, which the profiled run does not survive either, and it
costs every file of every session from 0.2 ms on a quiet disk to milliseconds on a busy one
(docs/performance.md)."""
import contextlib
import errno
import itertools
import json
import math
import os
import stat

from .. import _env

_counter = itertools.count()


def strict_json(value, **dump_options):
    """JSON text of `value` with NaN and infinities as null (never the bare tokens)."""
    try:
        return json.dumps(value, allow_nan=False, **dump_options)
    except ValueError:  # a non-finite float somewhere: replace them, then write
        return json.dumps(_finite(value), allow_nan=False, **dump_options)


def _finite(value):
    """A copy of `value` with every non-finite float replaced by None; iterative (any depth)."""
    holder = [value]
    pending = [(holder, 0)]
    while pending:
        container, key = pending.pop()
        item = container[key]
        if isinstance(item, float) and not math.isfinite(item):
            container[key] = None
        elif isinstance(item, dict):
            container[key] = copy = dict(item)
            pending.extend((copy, k) for k in copy)
        elif isinstance(item, (list, tuple)):
            container[key] = copy = list(item)
            pending.extend((copy, i) for i in range(len(copy)))
    return holder[0]


def write_text(path, text):
    """Writes `text` (UTF-8) to `path` atomically."""
    write_bytes(path, text.encode("utf-8"))


def sync_wanted():
    """Whether outputs are fsynced before their rename (FLAGTREE_PROFILER_FSYNC=1); the native
    writers follow the same answer (writers/profile.py hands it to them)."""
    return _env.fsync_outputs()


def write_bytes(path, data):
    """Writes `data` to `path` atomically: a small file in one write call, no buffered stream."""
    path = os.fspath(path)
    stream = _special_stream(path)
    if stream is not None:
        with stream as out:
            out.write(data)
        return
    temp, fd = _create_temporary(os.path.dirname(os.path.abspath(path)), os.path.basename(path))
    try:
        with _Naming(path, temp):
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                if sync_wanted():
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path)
    except BaseException:
        _discard(temp)
        raise
    # No fsync of the folder (as in the native writers): with FLAGTREE_PROFILER_FSYNC=1, after a
    # power loss the name holds the old file or the new one, both whole.


class _Naming:
    """Re-raises an OSError of writing `path` through `temp` as one that names `path` (same errno,
    so the same subclass), so that the user reads which output failed and why: os.write's,
    os.fsync's and os.close's errors (a full disk, EIO) name no file, and os.replace's name the
    temporary one first. In atomic_file's block an error naming no file is taken as the output's
    (its writes raise those); one naming another file (a caller's input) is left as it is."""

    def __init__(self, path, temp):
        self.path, self.temp = path, temp

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if not isinstance(error, OSError) or error.errno is None or error.filename not in (None, self.temp):
            return False
        raise OSError(error.errno, error.strerror, self.path) from error


def _discard(temp):
    try:
        os.unlink(temp)
    except OSError:
        pass


@contextlib.contextmanager
def atomic_file(path):
    """``with atomic_file(path) as out: out.write(b"...")``: a binary file that appears at `path`
    whole when the block ends, or not at all (for outputs written piece by piece)."""
    path = os.fspath(path)
    stream = _special_stream(path)
    if stream is not None:
        with stream as out:
            yield out
        return
    folder = os.path.dirname(os.path.abspath(path))
    temp, fd = _create_temporary(folder, os.path.basename(path))
    try:
        with _Naming(path, temp), os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            if sync_wanted():
                os.fsync(out.fileno())
        with _Naming(path, temp):
            os.replace(temp, path)
    except BaseException:
        _discard(temp)
        raise


def _special_stream(path):
    """An open stream to `path` when it is (or links to) a FIFO or a character device (`/dev/null`,
    a terminal, `/proc/self/fd/1`): those are written to in place as a shell's `>` would, since
    renaming over them would replace the device or leave the reader with nothing. Other kinds
    that are not regular files (a block device, a socket, a folder) are refused: neither a stream
    nor a replacement is what their owner meant. None: write the usual way (a regular file, no
    file, or a link to one, which the rename replaces)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # nothing there, or a dangling link: the rename puts a file there
        return None
    if stat.S_ISREG(mode):
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        raise OSError(errno.EINVAL, "not a regular file, a FIFO or a character device", path)
    # No O_CREAT, no O_TRUNC: should the name have become a regular file since the stat, opening
    # it changes nothing, and the check below sends it the usual way.
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    now = os.fstat(fd).st_mode
    if stat.S_ISFIFO(now) or stat.S_ISCHR(now):
        return os.fdopen(fd, "wb")
    os.close(fd)
    return None


def _create_temporary(folder, name):
    for _ in range(100):  # a name left by a killed process with a reused pid is skipped
        temp = os.path.join(folder, f".{name}.{os.getpid()}.py{next(_counter)}.tmp")
        try:
            # O_EXCL: never write through something already there (a planted link included).
            return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        except OSError as error:  # a folder gone or read-only: said of the output, not of its temporary name
            raise OSError(error.errno, error.strerror, os.path.join(folder, name)) from error
    raise FileExistsError(f"cannot create a temporary file beside {os.path.join(folder, name)}")


def write_json(path, value, **dump_options):
    write_text(path, strict_json(value, **dump_options))


def remove(path):
    """Removes `path` if it exists (the entry itself, should it be a link)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
