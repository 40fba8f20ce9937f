"""A session's native launch log (``native.session.launch_log_*``) shared by the parts of the
package that read it. One session may have several users: backend="tianshu" keeps it for
``launch_log=on`` while the device timer it takes its times from keeps it for the call stacks of
kernel-side scopes. The native switch is one per session, and turning it on or off empties the log,
so each user keeps and lets go under its own name here: the first one turns the log on, the last
one off, and a user done early cannot empty the log another still reads."""
import threading

from .native_core import native

_lock = threading.Lock()
_users = {}  # slot -> (session id, names of the users keeping its log)


def keep(session, user):
    """`user` reads the session's launch log later: logged from now on (the first user starts
    it empty; a second one keeps what was logged). Keeping it again is a no-op."""
    with _lock:
        held = _users.get(session.slot)
        if held is None or held[0] != session.id:  # none, or the slot's previous session's
            held = _users[session.slot] = (session.id, set())
        if not held[1]:
            native.session.launch_log_enable(session.slot, True)
        held[1].add(user)


def let_go(session, user):
    """`user` is done with the session's log; the last user's let-go frees it. A user that does
    not keep it (or lets go twice) changes nothing."""
    with _lock:
        held = _users.get(session.slot)
        if held is None or held[0] != session.id or user not in held[1]:
            return
        held[1].discard(user)
        if held[1]:
            return
        del _users[session.slot]
        try:
            native.session.launch_log_enable(session.slot, False)
        except ValueError:  # the session's slot is already freed, and its log with it
            pass


def users(session):
    """The names keeping the session's log (a copy)."""
    with _lock:
        held = _users.get(session.slot)
        return set(held[1]) if held is not None and held[0] == session.id else set()
