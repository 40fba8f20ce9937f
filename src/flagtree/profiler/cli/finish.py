"""The end of a command run: SIGTERM unwinding the target like sys.exit, writing the profile
(abandoned cleanly on Ctrl-C or SIGTERM during the write), and the line that says what was written."""
import signal

from .. import session as _session
from ..paths import part_stem
from .data_option import run_files
from .interrupted_write import WriteInterrupted, abandon_the_write, identities, interrupted_line
from .output import say


def _on_sigterm(signum, frame):
    # Unwinds the target like sys.exit, so the finally-block still writes the profile.
    raise SystemExit(128 + signum)


def install_sigterm():
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # main() called outside the main thread: signals can't be handled here
        return None


def finish(opened, code):
    """Writes the profile and says where; a failed write turns a clean exit into status 1. A
    signal during the write abandons what is left of it (a native writer runs to its end first:
    its file is whole or absent), and one line says what was and was not written."""
    try:
        previous = {n: signal.signal(n, abandon_the_write) for n in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # main() called outside the main thread: signals can't be handled here
        previous = {}
    before = identities(opened)
    try:
        return _write(opened, code)
    except WriteInterrupted as stop:
        _session.discard_command_session()  # what was not written is not written at exit either
        say(interrupted_line(opened, stop.signum, before))
        return 128 + stop.signum
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _write(opened, code):
    try:
        _session.finalize_command_session()
    except Exception as error:
        say(f"error: could not write the profile: {error}")
        return code or 1
    for files in run_files(opened) if opened is not None else ():
        say(wrote_line(files))
    return code


def wrote_line(files):
    """What finalize wrote: the profile, or its parts (written instead of it, see flush_part)."""
    if len(files) == 1:
        return f"wrote {files[0]}"
    stem = part_stem(files[0])
    extension = files[0][files[0].rindex("."):]
    return (f"wrote {len(files)} parts, {files[0]} to {files[-1]}; view them merged: "
            f"flagtree-profiler-viewer {stem}*{extension}")
