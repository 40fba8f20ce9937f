"""Proton's ``context.depth(session)``: how deep the calling thread's context is now, as the
session's context source sees it. (The native ``_native.context`` is another module: the
shadow stack's C calls; this one is the Python API Proton's users import as ``proton.context``.)"""
import sys

from . import session as sessions
from .distributed import ranks
from .native_core import native
from .session_checks import PROTON_WORDS


def depth(session=0):
    """The context depth of the calling thread for an open session (default 0, as Proton's):

    - ``context="shadow"``: the number of scopes a launch from this thread would be under now
      (its own scope stack, and what it inherits from the thread that started it: README,
      "Threads and autograd"); states are not counted, as Proton does not count them.
    - ``context="python"``: the number of Python frames on this thread's stack, this function's
      own frame included, which is what Proton's Python context source counts.

    None when no session is open (Proton: None once profiling is off) or profiling is disabled;
    ValueError, with Proton's words, for an id that is not an open session while others are.
    """
    if ranks.profiling_off() or not sessions.open_sessions():
        return None
    found = sessions.find_session(session) if type(session) is int else None  # True is no id (open_targets)
    if found is None:
        raise ValueError(f"no open profiling session {session!r} ({PROTON_WORDS}{session!r}); "
                         f"open sessions: {sessions.open_sessions() or 'none'}")
    if found.context == "python":
        frame, count = sys._getframe(), 0
        while frame is not None:
            count += 1
            frame = frame.f_back
        return count
    return len(native.context.context_snapshot(False).scopes)
