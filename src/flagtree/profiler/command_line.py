"""The session of the flagtree-profiler command: started before the target runs; while it is
open the script's own start()/finalize() calls defer to it (session.py keeps that state in _cli)."""
from . import session as _s


def begin_command_line_session(**options):
    """Starts the command's one session; later start/finalize calls of the script defer to it."""
    with _s._lock:
        session_id = _s.start(**options)
        _s._cli["session"] = session_id
        _s._cli["told"] = set()
        return session_id


def end_command_line_session():
    with _s._lock:
        session_id, _s._cli["session"] = _s._cli["session"], None
        if session_id is None or session_id == -1:
            return
        # The script may have finalized nothing and opened nothing else; close all that is open.
        if _s._sessions:
            _s._finalize_locked(list(_s._sessions.values()))


def discard_open_sessions():
    """Closes every open session without writing it: the command was stopped while starting."""
    with _s._lock:
        _s._cli["session"] = None
        for s in list(_s._sessions.values()):
            _s._close(s)
