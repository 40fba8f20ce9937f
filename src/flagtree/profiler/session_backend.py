"""A session's backend at start(): acquired, the session attached, its hooks installed; on any
failure what was done is undone (session.py's _close undoes it at finalize)."""
from .backends import BackendUnavailable
from .hooks import inheritance
from .native_core import native


def _acquire(impl, options, chosen_by_environment):
    try:
        impl.open_use(options)  # acquire() and the declared launch hooks
    except BackendUnavailable as error:
        if not chosen_by_environment:
            raise
        raise BackendUnavailable(f"FLAGTREE_PROFILER_BACKEND={impl.name}: {error}") from None


def start_backend(session, chosen_by_environment):
    """Acquires the session's backend, attaches the session and installs its hooks; on any
    failure undoes what was done, the native session included, and raises."""
    impl = session.backend
    try:
        _acquire(impl, session.options, chosen_by_environment)
    except BaseException:
        native.session.session_remove(session.slot)
        raise
    # A backend may pick its time source while starting (tianshu: the device timer or the host).
    native.session.session_set_time_source(session.slot, native.TimeSource[impl.time_source_kind])
    try:
        impl.attach_session(session)
    except BaseException:
        native.session.session_remove(session.slot)
        impl.close_use()
        raise
    try:
        inheritance.install()  # threads and autograd inherit scopes (hooks/inheritance.py)
        session.inheritance = True
        if session.hook == "triton":
            from .hooks.triton import install  # deferred: only hook= sessions use the launch-metadata hook

            session.hook_handle = install(impl)
    except BaseException:
        if session.inheritance:
            inheritance.uninstall()
        native.session.session_remove(session.slot)
        impl.close_use()
        raise
