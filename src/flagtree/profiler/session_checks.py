"""What start() and finalize() accept, checked before anything starts: the choices of context,
data (one kind or several, run_group.py) and hook, the backend and its mode, and the session ids finalize() takes."""
from .backends import get_backend, select_backend
from .paths import base_name
from .run_group import DATA_KINDS, split_data  # noqa: F401 (DATA_KINDS: the command's choices)

CONTEXTS = ("shadow", "python")
HOOKS = ("triton",)


def check_choice(what, value, choices):
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; supported: {', '.join(map(str, choices))}")


def check_arguments(name, context, data, backend, mode, hook, select=True):
    """(name without extension, backend, its options), or start()'s error; select=False: no backend."""
    base = base_name(name)
    check_choice("context", context, CONTEXTS)
    split_data(data)  # one kind, or several joined by commas (run_group.py)
    if hook is not None:
        check_choice("hook", hook, HOOKS)
    if not select:
        return base, None, None
    impl = get_backend(backend or select_backend())
    return base, impl, impl.check_mode(mode)


# What Proton says of an unknown session id: code that looks for its words finds them in ours.
PROTON_WORDS = "Session has not been initialized: "


def _check_type(session_id):
    # An int only, as start() returns: True, 1.0 or numpy.int64(1) hash and compare as session 1
    # does, and would act on it in one call and be refused in another.
    if type(session_id) is not int:
        raise ValueError(f"session id must be an int returned by start(), got {session_id!r}")


def open_targets(session_id, open_sessions):
    """The open sessions (id -> Session) a call on `session_id` acts on: all for None, else that one;
    ValueError, with Proton's words, for an id no open session has."""
    if session_id is None:
        return list(open_sessions.values())
    _check_type(session_id)
    if session_id not in open_sessions:
        raise ValueError(f"no open profiling session {session_id!r} ({PROTON_WORDS}{session_id!r}); "
                         f"open sessions: {sorted(open_sessions) or 'none'}")
    return [open_sessions[session_id]]


def check_issued(session_id, issued, open_ids):
    """finalize() is idempotent for a session start() returned (ids below `issued`), and an error
    for anything else (as activate() is): a typo must not pass for a session already written."""
    if session_id is None:
        return
    _check_type(session_id)
    if not 0 <= session_id < issued:
        raise ValueError(f"no profiling session {session_id!r} was started in this process ({PROTON_WORDS}"
                         f"{session_id!r}); open sessions: {sorted(open_ids) or 'none'}")
