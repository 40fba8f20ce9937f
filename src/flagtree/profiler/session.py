"""Sessions on the Python side: the open sessions, their backend life cycle, parts and
finalize. The native core holds the data; this module decides when it goes. What start()
accepts: session_checks.py; what a session writes, and in which order: session_outputs.py.

Parts (long runs): ``flush_part()`` (or, with FLAGTREE_PROFILER_PERIODIC_S, a timer thread per
session) writes what a session collected since its previous part to ``<name>.part<k>.hatchet``
(or ``.chrome_trace``), k = 1, 2, ..., and frees it: the tree keeps its nodes (threads cache
their ids) with their metrics zeroed, and empty nodes are left out of the part; the trace's event
store is emptied. The caller's thread only flushes and takes the data out (a schedule's window on
nvidia leaves even that to the writer: session_outputs.write_parts); part_writer.py's thread writes
the file, and finalize waits for it. Once a session has written a part, its finalize writes the rest
as the last part and no ``<name>.hatchet``; the metadata file lists every part under ``parts``.
Merging all parts (``flagtree-profiler-viewer name.part*.hatchet``) gives an unsplit run's totals.
File names: paths.py. A trigger's window (trigger.py) closes through finalize_window: its last
part(s) and metadata are left to the writer thread too (window_close.py).

Interpreter exit: sessions still open when the interpreter exits are finalized by an atexit
handler, so a script that forgets finalize() still gets its profile; under flagtree-profiler the
command's own session is written by the command first, and the handler finds nothing open.
"""
import atexit
import threading

import sys

from . import _env, part_writer
from .distributed import gather, ranks
# Every session installs these (scope inheritance by threads and autograd; NVTX ranges as scopes),
# so they come with the package, not at the first start(); hooks/triton.py stays lazy (hook= only).
from .hooks import inheritance, nvtx
from .paths import check_writable, output_paths
from .periodic_parts import start_timer
# CONTEXTS, DATA_KINDS and HOOKS are also read from here (the command's option choices).
from .session_checks import CONTEXTS, DATA_KINDS, HOOKS, check_arguments, check_issued, open_targets  # noqa: F401
from .session_outputs import raise_failed_parts, wait_for_closes, wait_for_parts, warn_of_failed_parts, write_outputs
from .session_outputs import settle_parts_after_failure, write_parts
from .session_backend import start_backend
from .session_keywords import NOT_GIVEN, check_output_format, session_of
from .window_close import close_window, gather_window, wait_for_windows
from . import schedule_steps as scheduling
from .session_record import Session
from .run_group import join, members, split_data, start_run_id
from .common.safe_text import safe
from .native_core import native

_lock = threading.RLock()
_sessions = {}  # id -> Session, open sessions only
_next_id = [0]
_name_kinds = {}  # name -> the data kind that first used it in this process (its <name>.meta.json)
# Command-line mode (flagtree-profiler): the script's own start/finalize calls must not end
# the one session the command runs; what happened to them is said once.
_cli = {"session": None, "told": set(), "note": None}
_DEFERRED = ("the script's own start() and finalize() defer to the command's session, which writes one "
             "profile for the whole run when the command ends")
# Armed triggers' listeners (trigger.py): step() calls them first, outside the lock; each returns
# the parts it wrote. A tuple, replaced on each change: step() need not copy it (a window's close
# may disarm its listener meanwhile). _lone_schedule: (id, Stepping) of the one open session while
# it is the only one and has a schedule, else None; set under _lock (_note_sessions).
step_listeners, _lone_schedule = (), None


def listen_to_steps(listener, listening=True):
    """Adds an armed trigger's step listener, or removes it (harmless when it is not there)."""
    global step_listeners
    step_listeners = tuple(known for known in step_listeners if known != listener) + (listener,) * listening


def _tell_once(key, message):
    """Under the command: one note on stderr the first time the script's start() or finalize()
    defers to the command's session. A note, not a warning: the command's own examples call them."""
    if not _cli["told"]:
        sys.stdout.flush()  # after what the script printed so far, as the command's own lines
        print(f"flagtree-profiler: note: {_cli['note'] or message}", file=sys.stderr, flush=True)
    _cli["told"].add(key)


def start(name=None, *, context="shadow", data="tree", backend=None, mode=None, hook=None, schedule=None):
    """`schedule`: what profiler.schedule(...) returns; step() then moves the session through it."""
    scheduling.check(schedule)
    if ranks.profiling_off():
        return -1
    with _lock:
        if _cli["session"] is not None:
            # A wrong argument is the script's bug under the command too; a mode is checked only
            # against a backend the script names (the one selected here may not be the one meant).
            check_arguments(name, context, data, backend, mode, hook, select=backend is not None)
            _tell_once("start", _DEFERRED)
            return _cli["session"]
        # Scheduled: inactive until begin() applies step 0, lest other threads' launches land before it.
        session_id = _start_locked(name, context, data, backend, mode, hook, active=schedule is None)
        if schedule is not None:
            scheduling.begin(_sessions[session_id], schedule)
            _note_sessions()
        return session_id


def _start_locked(name, context, data, backend, mode, hook, active=True):
    """One session per data kind (run_group.py); the first one's id is the run's."""
    base, impl, options = check_arguments(name, context, data, backend, mode, hook)
    kinds = split_data(data)
    base = ranks.output_base(base)  # <name>.rank<r> under a distributed launch
    for other in (m for s in _sessions.values() for m in members(s)):
        if other.name == base and other.data in kinds:
            raise ValueError(f"a session writing {other.output_path!r} is already open (session {other.id})")
    check_writable(base)
    periodic = _env.periodic_seconds()  # a bad value is an error before anything starts
    session = _start_one(base, context, kinds[0], impl, options, hook, backend, active=active)
    try:
        for kind in kinds[1:]:  # no hook of their own: the first session's serves every kind
            join(session, _start_one(base, context, kind, impl, options, None, backend, session, active))
    except BaseException:
        _close(session)
        raise
    _sessions[session.id] = session
    _note_sessions()
    _next_id[0] += 1
    _name_kinds.setdefault(base, kinds[0])  # claimed once the session runs: a failed start claims nothing
    if periodic is not None:
        start_timer(session, periodic, _lock, _sessions)
    return session.id


def _start_one(base, context, data, impl, options, hook, backend, primary=None, active=True):
    """Starts one native session of one data kind; `primary`: the run it is a companion in."""
    paths = output_paths(base, data, shared_name=primary is None and _name_kinds.get(base, data) != data)
    session = Session(_next_id[0], base, context, data, impl, options, hook, paths)
    session.slot = native.session.session_create(native.ContextKind[context], native.DataKind[data],
                                                 native.TimeSource[impl.time_source_kind], active)
    start_backend(session, chosen_by_environment=backend is None and bool(_env.backend()))
    if _env.nvtx_enabled():
        nvtx.install()
        session.nvtx = True
    session.dropped_at_start = impl.dropped_records()
    session.start_realtime_ns = native.core.realtime_ns()
    session.start_monotonic_ns = native.core.monotonic_ns()
    start_run_id(session)
    return session


def flush_part(session_id=None, *, wait=False):
    """Writes what one session (or every open one) collected since its previous part to
    ``<name>.part<k>.hatchet`` (``.chrome_trace`` for data="trace") and frees it, so that a long
    run keeps bounded memory. Waits for the device (a flush) and takes the data out; the file is
    written on the writer thread (part_writer.py). Returns the parts' paths; with `wait`, once
    the sessions' parts are written (a failed write raises RuntimeError)."""
    if ranks.profiling_off() or session_id == -1:
        return []
    with _lock:
        targets = _targets(session_id)
        warn_of_failed_parts(targets)
        written = write_parts(targets, _sessions.values())
    if wait:
        failed = wait_for_parts(targets)  # the lock is free meanwhile: other threads' steps go on
        with _lock:
            raise_failed_parts(failed)
    return written


def _targets(session_id):
    return open_targets(session_id, _sessions)


def _note_sessions():
    """After the open sessions change (under _lock): the lone schedule step() reads unlocked."""
    global _lone_schedule
    only = next(iter(_sessions.values())) if len(_sessions) == 1 else None
    _lone_schedule = (only.id, only.stepping) if only is not None and only.stepping is not None else None


def step(session_id=None):
    """Ends one step of every scheduled session (or of this one): schedule_steps.py. Returns the
    parts handed to the writer thread (as flush_part). Sessions started without schedule= are
    left alone: with none, a no-op. An armed trigger (trigger.py) counts every step, whatever
    the id: its windows open and close here; it runs before the lock is taken, since its watcher
    thread takes its own lock and then this one."""
    written = []
    if step_listeners:  # a trigger's step may close the window that is session_id: no bad id then
        window_id = type(session_id) is int and session_id in _sessions
        for listener in step_listeners:
            written += listener()
        if window_id and session_id not in _sessions:
            return written
    # Called every step of a serving loop, armed and idle included: with nothing open, a no-op
    # decided before the lock (a session another thread starts meanwhile begins after this step
    # either way). `is None` first: comparing None with -1 takes a rich comparison's slow path.
    if (not _sessions) if session_id is None else session_id == -1:
        return written
    # A quiet step of the one open session, scheduled (a serving loop between its windows): a count.
    lone = _lone_schedule
    if lone is not None and (session_id is None or session_id == lone[0] and type(session_id) is int) \
            and not part_writer.failed and lone[1].count.tick_below():
        return written
    with _lock:
        # The environment (profiling_off reads two variables) is read only for an id no open
        # session has (raised for unless profiling is off): an open one started with profiling on.
        if not _sessions and (session_id is None or ranks.profiling_off()):
            return written
        one = _sessions.get(session_id) if type(session_id) is int else None  # True is no id (open_targets)
        if one is None and session_id is None and len(_sessions) == 1:
            one = next(iter(_sessions.values()))  # step() with no id, one session open
        if one is not None:  # the common call: one open session, looked up once
            targets = (one,) if one.stepping is not None else ()
        else:
            targets = [s for s in _targets(session_id) if s.stepping is not None]
        if part_writer.failed:
            warn_of_failed_parts(targets)
        for s in targets:
            written += scheduling.advance(s, _write_window)
        return written


def _write_window(session):
    """A schedule's window ended: its part goes to the writer thread (under _lock)."""
    return write_parts([session], _sessions.values(), defer=True)


def activate(session_id=NOT_GIVEN, *, session=NOT_GIVEN):
    session_id = session_of("activate", session_id, session)  # session=: Proton's name (session_keywords.py)
    if ranks.profiling_off() or session_id == -1:
        return
    with _lock:
        for s in _targets(session_id):
            wait_for_closes([s])  # a window still being closed takes nothing recorded from here
            scheduling.set_active(s, True)
            scheduling.unsteady(s)


def deactivate(session_id=NOT_GIVEN, *, session=NOT_GIVEN):
    session_id = session_of("deactivate", session_id, session)
    if ranks.profiling_off() or session_id == -1:
        return
    with _lock:
        for s in _targets(session_id):
            scheduling.set_active(s, False)
            scheduling.unsteady(s)


def finalize(session_id=NOT_GIVEN, output_format="", *, session=NOT_GIVEN):
    """Writes and closes one session, or every open one. Harmless when nothing is open.
    `output_format`: Proton's; only checked against what the sessions write (session_keywords.py)."""
    session_id = session_of("finalize", session_id, session)
    if ranks.profiling_off() or session_id == -1:
        return
    with _lock:
        check_issued(session_id, _next_id[0], _sessions)
        if _cli["session"] is not None:  # the command chose what its session writes
            _tell_once("finalize", _DEFERRED)
            return
        if session_id is not None and session_id not in _sessions:
            # Already finalized (idempotent); a misspelt format fails as it does with nothing open.
            check_output_format(output_format, [])
            return
        check_output_format(output_format, _targets(session_id))  # before any session is written
        _finalize_locked(_targets(session_id))


def _finalize_locked(sessions):
    wait_for_windows()  # closed windows' metadata first: an open window's is the newer
    wait_for_closes(sessions)  # their last window's part is taken before the rest
    for s in sessions:
        for m in members(s):
            native.session.session_begin_close(m.slot)
    for impl in {id(s.backend): s.backend for s in sessions}.values():
        impl.flush()
    errors = []
    for s in sessions:
        try:
            s.extra_stats = s.backend.session_outputs(s) or {}
            write_outputs(s)
        except Exception as error:  # one failed output must not lose the other sessions'
            errors.append(error)
            settle_parts_after_failure(s)
        finally:
            _close(s)
    gather.after_finalize(sessions)  # FLAGTREE_PROFILER_GATHER: every rank's files to rank 0
    if errors:
        raise errors[0]


def _close(s):
    wait_for_closes([s])  # the writer thread takes from the slot until then
    for companion in s.companions:
        _close(companion)
    if s.metadata_owner is None:  # a companion shares its run's id but is not an open session
        _sessions.pop(s.id, None)
        _note_sessions()
    if s.timer_stop is not None:
        s.timer_stop.set()  # not joined: it may be waiting for the lock held here
    if s.nvtx:
        nvtx.uninstall()
        s.nvtx = False
    if s.hook_handle is not None:
        s.hook_handle.remove()
        s.hook_handle = None
    if s.inheritance:
        inheritance.uninstall()
        s.inheritance = False
    native.session.session_remove(s.slot)
    try:
        s.backend.detach_session(s)
    finally:
        s.backend.close_use()


def open_sessions():
    with _lock:
        return sorted(_sessions)


# The command's session (flagtree-profiler): cli/command.py drives it through these four.
def start_command_session(**options):
    """Starts the command's one session (start()'s options); returns its id, -1 when disabled.
    Until it ends, the script's start() returns this id and its finalize() is deferred."""
    with _lock:
        session_id = start(**options)
        _cli["session"] = session_id
        _cli["told"] = set()
        return session_id


def finalize_command_session():
    """Ends the command's session: writes and closes it and whatever else the script left open."""
    with _lock:
        session_id, _cli["session"], _cli["note"] = _cli["session"], None, None
        if session_id is None or session_id == -1:
            return
        if _sessions:
            _finalize_locked(list(_sessions.values()))


def discard_command_session():
    """Ends the command's session, closing every open one unwritten (stopped while starting)."""
    with _lock:
        _cli["session"] = _cli["note"] = None
        for s in list(_sessions.values()):
            _close(s)


def start_window(prepare, **options):
    """Starts one window of an armed trigger (trigger.py) with start()'s options, also under the
    command; `prepare(session)` runs before any other thread can see the session. Returns it."""
    with _lock:
        session = _sessions[_start_locked(**options)]
        prepare(session)
        return session


def finalize_window(session_id, log):
    """Closes a trigger's window session, also under the command: its last parts and metadata go
    to the writer thread (window_close.py). Returns their jobs; `log`: the armed run's WindowLog."""
    with _lock:
        s, jobs = _sessions.get(session_id), []
        if s is None:
            return jobs
        try:
            jobs = close_window(s, log)
        finally:
            _close(s)
        gather_window(s, jobs)
        return jobs


def defer_to_trigger(note):
    """Under flagtree-profiler --trigger: the script's start() returns -1 and its finalize() is
    deferred, as under the command's own session; `note` says so once."""
    with _lock:
        _cli.update(session=-1, told=set(), note=note)


def command_running():
    """Whether flagtree-profiler runs this process (its session, or its trigger)."""
    return _cli["session"] is not None


def note_deferred(key, message):
    """Under the command: says once that the script's call `key` defers to the command."""
    with _lock:
        _tell_once(key, message)


def find_session(session_id):
    """The open Session with this id (its name and output paths), or None."""
    with _lock:
        return _sessions.get(session_id)


def _finalize_at_exit():
    """atexit: writes the sessions a script left open. Under flagtree-profiler the command's
    own finally has already written (and closed) its session by now."""
    with _lock:
        if _cli["session"] is not None or not _sessions:
            return
        try:
            _finalize_locked(list(_sessions.values()))
        except Exception as error:
            print(f"flagtree.profiler: writing the profile at exit failed: {safe(str(error))}", file=sys.stderr)


atexit.register(_finalize_at_exit)
