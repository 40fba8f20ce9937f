"""Windows of a running program: arm() leaves the program unprofiled (no session, no vendor
tracer, no launch hook) until a trigger opens a window, which is one session with the armed
options, written as one part when the window closes; the next trigger opens the next window.

Triggers (trigger_text.py): a signal, a file touched, or step ranges. Windows last N steps
(counted by step()) or T seconds. Steps count from 0 at arm(); step() ends one.

Where a window opens: a signal handler runs wherever the main thread is (inside a launch, say),
so it only counts (trigger_sources.py). A steps window opens at the next step() (it holds whole
steps: the N steps after the one in which the trigger came); a seconds window opens at once on the
watcher thread (a daemon woken by the handler, or every FILE_POLL_S for a file), or at the next
step() if that comes first, and the watcher closes it T seconds later. A trigger while a window
is open, or while one waits for its step(), is ignored and counted (``ignored_triggers``).

Outputs: window k writes ``<name>.part<k>.<ext>`` (``<name>.rank<r>.part<k>`` under a launcher) and
rewrites ``<name>.meta.json``, which lists every window so far under ``windows`` (parts, steps,
wall times, what closed it) and every part under ``parts``; every file carries the armed run's one
run id. The viewer merges them: ``flagtree-profiler-viewer <name>.hatchet`` reads all the parts.
The closing thread only ends the window and takes its data; the part writer's thread writes the
files (window_close.py), and disarm() waits for them.
"""
import atexit
import os
import sys
import threading
import time
import warnings

from . import _env
from . import session as _session
from .distributed import ranks
from .native_core import native
from .run_group import members
from .run_id import new_run_id
from .session_checks import check_arguments
from .trigger_ahead import WindowAhead
from .trigger_sources import FileSource, SignalSource, Waker
from .trigger_text import trigger_and_window
from .window_close import WindowLog, wait_for_windows
from .common.safe_text import safe

_state = {"armed": None}
_arm_lock = threading.Lock()


class Armed:
    """One armed run: its trigger, window, session options and the windows it wrote. Read
    ``windows`` (one dict each, as in the metadata), ``ignored_triggers``, ``files`` and ``step``."""

    def __init__(self, trigger, window, options, backend=None):
        self.trigger, self.window, self.options = trigger, window, options
        self.run_id = new_run_id()
        self._count = native.core.StepCount()  # steps ended: counted without the lock (on_step)
        self.windows = []
        self.ignored_triggers = 0
        self._failures = 0  # windows that could not open, or close, on the caller's thread
        self._log = WindowLog()  # what the writer thread found of closed windows (window_close.py)
        self.files = []  # every part written, in order
        self._pending = False  # a trigger seen whose window has not opened yet
        self._ranges = list(trigger.ranges)  # a steps trigger's ranges not opened yet
        self._next_range = trigger.ranges[0][0] if trigger.ranges else -1  # the step the next one opens at
        # A steps window's start prepared ahead (trigger_ahead.py), and the step from which
        # step() takes the lock (the next range's start, or an earlier one the planning needs).
        self._ahead = WindowAhead(backend, self._next_range)
        self._lock_from = self._ahead.lock_from(self._next_range)
        self._open = None  # the open window: its session and facts
        self._parts = {}  # data kind -> its parts so far
        self._lock = threading.Lock()
        self._waker, self._source, self._thread, self._stop = None, None, None, False

    @property
    def failed_windows(self):
        """Windows that could not open or were not written (their writes may still be pending)."""
        return self._failures + len(self._log.lost_windows)

    def __repr__(self):
        return f"<armed {self.trigger} window {self.window or 'its steps'}: {len(self.windows)} windows>"

    # -- arming and disarming ----------------------------------------------------------------
    def begin(self):
        if self.trigger.kind != "steps":
            self._waker = Waker()
            try:
                self._source = (SignalSource(self.trigger.signum, self._waker) if self.trigger.kind == "signal"
                                else FileSource(self.trigger.path))
            except BaseException:
                self._waker.close()
                raise
            self._thread = threading.Thread(target=self._watch, name="flagtree-profiler-trigger", daemon=True)
            self._thread.start()
        _session.listen_to_steps(self.on_step)
        if self._next_range == 0:
            with self._lock:
                self._open_due("arm()", 0)

    def end(self):
        """Stops watching and closes the open window (its part written); returns the files written."""
        _session.listen_to_steps(self.on_step, False)
        if self._thread is not None:
            self._stop = True
            self._waker.wake()
            self._thread.join(timeout=10)
        with self._lock:
            written = self._close_window("exit", self.step) if self._open is not None else []
            _release_parked_tracer()  # attached ahead of a window that did not come
        wait_for_windows()  # every window's files are written before disarm() returns
        with self._lock:
            self._warn_of_lost_windows()
            if self._source is not None:
                self._source.close()
                self._source = None
            if self._pending:
                warnings.warn(f"flagtree.profiler: trigger {self.trigger} fired but no step() came to open its "
                              f"window of {self.window} (a steps window opens at step())", stacklevel=3)
        if self._waker is not None and not (self._thread is not None and self._thread.is_alive()):
            self._waker.close()
            self._waker = None
        return written

    # -- the two places a window opens and closes ----------------------------------------------
    def on_step(self):
        """step(): one step ended. Returns the parts handed to the writer thread. Idle (no window
        open or due, no trigger or failed write to act on), a step is counted without the lock:
        it runs on the program's hot path, between a synchronize and the next launch, with caches
        cooled by the step, where taking a lock costs more than the rest (bench/idle_cost.py)."""
        ended = self._count.tick()  # each step ends once, whichever thread calls
        # A step at or past the next range's start takes the lock even before another thread's
        # step opens that window: it may be the window's step, and is then counted in it.
        if self._open is None and not self._pending and (self._lock_from < 0 or ended + 1 < self._lock_from) \
                and not self._log.reports and (self._source is None or self._source.quiet()):
            return []
        with self._lock:
            if self._log.reports:
                self._warn_of_lost_windows()
            count = self._source.take() if self._source is not None else 0
            if count:
                self._note(count)
            written = []
            window = self._open
            if window is not None:
                if window["last_step"] is not None and ended >= window["last_step"]:
                    written = self._close_window("steps", ended)
                elif window["deadline"] is not None and time.monotonic() >= window["deadline"]:
                    written = self._close_window("seconds", ended)
            if self._open is None and (self._pending or self._next_range == ended + 1):
                self._open_due("step()", ended + 1)
            elif self._open is None and self._next_range >= 0:
                self._ahead.on_step(ended + 1, self._next_range)
            self._lock_from = self._ahead.lock_from(self._next_range)
            return written

    def _watch(self):
        """The watcher thread: sleeps until the handler wakes it, a file is due or a window's time
        is up; opens seconds windows, closes them, and notes triggers for steps windows."""
        while not self._stop:
            timeout = self._source.poll_s if self._source is not None else None
            window = self._open
            if window is not None and window["deadline"] is not None:
                left = max(0.0, window["deadline"] - time.monotonic())
                timeout = left if timeout is None else min(timeout, left)
            self._waker.wait(timeout)
            with self._lock:
                if self._stop or self._source is None:
                    return
                now = time.monotonic()
                self._note(self._source.take(due=True))
                window = self._open
                if window is not None and window["deadline"] is not None and now >= window["deadline"]:
                    self._close_window("seconds", self.step)
                if self._open is None and self._pending and self.window.unit == "seconds":
                    self._open_due("watcher thread", self.step)

    def _note(self, count):
        """`count` new triggers: the first opens a window unless one is open or waiting."""
        for _ in range(count):
            if self._open is not None or self._pending:
                self.ignored_triggers += 1
            else:
                self._pending = True

    @property
    def step(self):
        """Steps ended since arm(): the step in progress."""
        return self._count.value

    def _open_due(self, where, step):
        """Opens the window due now, if any (under the lock, no window open) at `step`, the step
        in progress; `where`: the thread or call that opens it, for the metadata."""
        if self.trigger.kind == "steps":
            if self._next_range == step:
                last = self._ranges.pop(0)[1]
                self._next_range = self._ranges[0][0] if self._ranges else -1
                self._open_window(where, step, last_step=last)
        elif self._pending:
            self._pending = False
            if self.window.unit == "steps":
                self._open_window(where, step, last_step=step + self.window.amount - 1)
            else:
                self._open_window(where, step, seconds=self.window.amount)

    def _open_window(self, where, step, last_step=None, seconds=None):
        def prepare(session):  # the window continues the armed run: its parts, its run id
            session.window = {"trigger": str(self.trigger)}  # a part, even if finalize() closes it first
            for m in members(session):
                m.parts = list(self._parts.get(m.data, []))
                m.part_steps = [None] * len(m.parts)
                m.earlier_parts = len(m.parts)
                m.run_id = self.run_id

        try:
            session = _session.start_window(prepare, **self.options)
        except Exception as error:  # the program goes on; the next trigger tries again
            self._failures += 1
            warnings.warn(f"flagtree.profiler: trigger {self.trigger}: window {len(self.windows) + 1} could not "
                          f"open: {error}")
            return
        self._ahead.opened(step)
        # A seconds window's time runs from here, once its session is open.
        deadline = time.monotonic() + seconds if seconds is not None else None
        self._open = {"session": session, "first_step": step, "last_step": last_step, "deadline": deadline,
                      "opened_at": where, "start_time_ns": native.core.realtime_ns(),
                      "parts_before": {m.data: len(m.parts) for m in members(session)}}

    def _close_window(self, closed_by, last_step):
        """Closes the open window and hands its part(s) and metadata to the writer thread
        (window_close.py); `last_step`: the last step in progress while it was open. Returns the
        parts, written there shortly after."""
        self._warn_of_lost_windows()
        window, self._open = self._open, None
        session = window["session"]
        still_open = _session.find_session(session.id) is session
        # Its parts: any periodic ones, then the next of each kind, which finalize_window writes
        # (none when the program's own finalize() closed the window first: it wrote that part).
        parts = {m.data: m.parts[window["parts_before"][m.data]:] + [m.part_path(len(m.parts) + 1)] * still_open
                 for m in members(session)}
        entry = {"window": len(self.windows) + 1, "steps": list(range(window["first_step"], last_step + 1)),
                 "start_time_ns": window["start_time_ns"], "stop_time_ns": native.core.realtime_ns(),
                 "opened_at": window["opened_at"], "closed_by": closed_by if still_open else "finalize()",
                 "parts": [p for m in members(session) for p in parts[m.data]]}
        if still_open:
            session.window = self._facts(self.windows + [entry], session, parts)
            try:
                _session.finalize_window(session.id, self._log)
            except Exception as error:  # a failed close loses this window only
                self._failures += 1
                self._warn_not_written(entry["window"], error)
                return []
        if not self._ahead.closed(session.backend, last_step, self._next_range):
            _let_go_between_windows()
        self._lock_from = self._ahead.lock_from(self._next_range)
        for m in members(session):
            self._parts[m.data] = self._parts.get(m.data, []) + parts[m.data]
        self.windows.append(entry)
        self.files += entry["parts"]
        return entry["parts"]

    def _warn_of_lost_windows(self):
        """Warns of each window the writer thread could not write, once."""
        for number, error in self._log.take_reports():
            self._warn_not_written(number, error)
            # Its part numbers stay taken (_parts): the next window's are the next ones.
            self.files = [f for f in self.files if f not in self._log.lost]

    def _warn_not_written(self, number, error):
        warnings.warn(f"flagtree.profiler: trigger {self.trigger}: window {number} was not written: "
                      f"{safe(str(error))}", stacklevel=4)

    def _facts(self, windows, session, new_parts):
        """What each window's metadata adds: the trigger, every window so far, and the steps of
        each part, in the order of its ``parts`` (by data kind, then by number)."""
        steps_of = {part: w["steps"] for w in windows for part in w["parts"]}
        ordered = [p for m in members(session) for p in self._parts.get(m.data, []) + new_parts[m.data]]
        return {"trigger": str(self.trigger), "trigger_window": str(self.window) if self.window else None,
                "windows": windows, "ignored_triggers": self.ignored_triggers,
                "failed_windows": self._failures, "part_steps": [steps_of.get(p) for p in ordered]}


def _nvidia_attach():
    """cupti_attach.py where loaded: looked up, not imported, so that a window of another backend
    never loads NVIDIA's modules."""
    return sys.modules.get("flagtree.profiler.backends.nvidia.cupti_attach")


def _let_go_between_windows():
    """After a window the program is idle again: CUPTI, kept attached between sessions for the
    next one (cupti_attach.py), would still record every kernel for FLAGTREE_PROFILER_CUPTI_IDLE_S.
    It is let go at once instead, off the program's thread (a no-op while another session runs)."""
    cupti_attach = _nvidia_attach()
    if cupti_attach is not None:
        cupti_attach.let_go_between_windows()


def _release_parked_tracer():
    """disarm(): CUPTI, attached ahead of a window that did not come (or kept between windows), is
    released now."""
    cupti_attach = _nvidia_attach()
    if cupti_attach is not None:
        cupti_attach.release()


def _check_folder(base):
    """arm() writes nothing, not even a folder: is the output's folder (or the nearest one that
    exists, where it would be made) writable?"""
    folder = os.path.dirname(os.path.abspath(base))
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write the profile to {base!r}: {folder!r} is not writable")


def arm(trigger=None, window=None, *, name=None, context="shadow", data="tree", backend=None, mode=None, hook=None):
    """Arms the program: each `trigger` opens a window, a session with start()'s options written
    as one part when the window (`window`) closes. `trigger` and `window` are texts (trigger_text.py;
    None: FLAGTREE_PROFILER_TRIGGER and FLAGTREE_PROFILER_WINDOW). Returns the Armed run, or None
    when profiling is off for this process or the command runs it (its --trigger arms instead).
    Raises ValueError on a bad text or option, RuntimeError when already armed."""
    if ranks.profiling_off():
        return None
    if _session.command_running():
        _session.note_deferred("arm", "the script's own arm() defers to the command (flagtree-profiler --trigger arms)")
        return None
    return begin(check(trigger, window, dict(name=name, context=context, data=data, backend=backend, mode=mode,
                                             hook=hook)))


def begin(armed):
    """Arms the process with a checked Armed run (check()); returns it."""
    with _arm_lock:
        if _state["armed"] is not None:
            raise RuntimeError(f"already armed ({_state['armed'].trigger}): disarm() first")
        armed.begin()
        _state["armed"] = armed
    return armed


def check(trigger, window, options):
    """An Armed run, checked (texts, options, the output's folder) but not begun."""
    trigger_text = trigger if trigger is not None else _env.trigger()
    if not trigger_text:
        raise ValueError("no trigger: give one (signal[:NAME], file:PATH, steps:A-B) or set FLAGTREE_PROFILER_TRIGGER")
    spec, length = trigger_and_window(trigger_text, window if window is not None else _env.window())
    base, backend, _ = check_arguments(**options, select=options["backend"] is not None)
    _check_folder(ranks.output_base(base))
    return Armed(spec, length, options, backend)


def disarm():
    """Stops the armed trigger, writing the open window; returns the files written then. Harmless
    when nothing is armed."""
    with _arm_lock:
        armed, _state["armed"] = _state["armed"], None
    return armed.end() if armed is not None else []


def armed():
    """The Armed run of this process, or None."""
    return _state["armed"]


def _disarm_at_exit():
    """atexit (registered after session.py's, so it runs first): the open window is written."""
    try:
        disarm()
    except Exception as error:
        warnings.warn(f"flagtree.profiler: writing the open window at exit failed: {error}")


def _forget_in_child():
    """A forked child (a data-loader worker) is not armed: it has no watcher thread, and its
    windows would write the parent's file names. The parent's window stays the parent's."""
    armed, _state["armed"] = _state["armed"], None
    if armed is not None:
        _session.listen_to_steps(armed.on_step, False)


atexit.register(_disarm_at_exit)
os.register_at_fork(after_in_child=_forget_in_child)
