"""profile(func, ...)(args): run one function inside its own session."""
import functools

from . import session


def profile(func=None, *, name=None, context="shadow", data="tree", backend=None, mode=None, hook=None,
            schedule=None):
    """Returns a callable that runs `func` in a new session, finalizes it and returns the session id.
    `schedule`: as start()'s; step() calls inside `func` move the session through it.

    Also usable as a decorator: @profile(name="p").
    """
    options = dict(name=name, context=context, data=data, backend=backend, mode=mode, hook=hook, schedule=schedule)
    if func is None:
        return lambda f: profile(f, **options)
    if not callable(func):  # said now: called, it would open a session, write an empty profile, then fail
        raise TypeError(f"profile() takes the function to run in its session, got {func!r}")

    @functools.wraps(func)
    def run(*args, **kwargs):
        session_id = session.start(**options)
        try:
            func(*args, **kwargs)
        finally:
            session.finalize(session_id)
        return session_id

    return run
