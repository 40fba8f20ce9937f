"""A trigger's window closed without writing on the caller's thread (trigger.py's windows).

On the caller's thread (session.finalize_window, under session.py's lock), only what must be ordered
with the program: recording ended, the backends flushed (the one wait for the device), the stats the
metadata carries read from the native session, each member's data taken out of its slot (as a
schedule's part: session_outputs.write_parts), and then the session closed, so that the next window
can open at once and the backend's global state changes on this thread as at any close. The
window's last part(s) and its metadata are written on part_writer.py's thread, in the order handed
over: after any periodic parts of the window, the old metadata removed before the first part, the
new one written after the parts, so it lists each part's ``write_ns`` and leaves out a part whose
write failed (``failed_parts``). A failure is kept on the armed run's WindowLog: trigger.py warns of
it at the next step(), window close or disarm(). disarm() (also at interpreter exit), finalize() and
the program's own finalize of an open window wait for these writes first (wait_for_windows).
"""
import threading
from collections import deque

from . import _env, part_writer
from .distributed import gather
from .native_core import native
from .part_writer import PartJob
from .run_group import members, run_facts
from .session_outputs import _next_part, _stats, _submit, _warn_of_losses, wait_for_closes
from .writers.atomic import remove
from .writers.metadata import build_metadata, metadata_json, write_metadata
from .writers.profile import device_clock_shift, profile_request

_pending = []  # every window's jobs handed over and maybe not written yet, oldest first
_pending_lock = threading.Lock()


class WindowLog:
    """What the writer thread learns of an armed run's windows after they closed: the parts whose
    write failed (their paths leave every later metadata) and the failures not yet warned of."""

    def __init__(self):
        self.lost = {}  # path -> its error's text
        self.lost_windows = []  # numbers of the windows with a part or metadata not written
        self.reports = deque()  # (window number, error text), taken by the caller's thread

    def take_reports(self):
        """The failures not yet warned of, oldest first (cheap when there are none)."""
        taken = []
        while self.reports:
            taken.append(self.reports.popleft())
        return taken


def close_window(s, log):
    """The caller's share of a window's close (`s` open, session.py's lock held): returns the jobs
    handed to the writer thread; session.py closes the session next."""
    began = native.core.monotonic_ns()
    wait_for_closes([s])  # a deferred close of an earlier part comes first
    for m in members(s):
        native.session.session_begin_close(m.slot)
    s.backend.flush()
    s.extra_stats = s.backend.session_outputs(s) or {}
    s.stop_realtime_ns = native.core.realtime_ns()
    stats, shift = _stats(s)  # before the take: the counts and extras are the session's
    shifts = {m.data: (shift if m is s else device_clock_shift(m)) for m in members(s)}
    facts = s.backend.metadata_facts()
    jobs = []
    for m in members(s):
        path, steps, other = _next_part(m)
        taken = native.dump.session_take_part(m.slot)
        if not jobs:  # the old metadata goes before the first of the window's files lands
            taken = _AfterRemoving(s.metadata_path, taken)
        jobs.append(PartJob(m, path, steps, taken, profile_request(m, other, shifts[m.data])))
        _submit(m, jobs[-1], began)
    meta = PartJob(s, s.metadata_path, None, _Metadata(s, stats, facts, log), {})
    meta.queue_wait_ns = part_writer.submit(meta)
    jobs.append(meta)
    with _pending_lock:
        _pending[:] = [j for j in _pending if not j.finished] + jobs
    _warn_of_losses(s, stats, shifts)
    return jobs


def wait_for_windows():
    """Returns once every window handed over so far is written (or failed)."""
    with _pending_lock:
        jobs = list(_pending)
    part_writer.wait(jobs)
    with _pending_lock:
        _pending[:] = [j for j in _pending if not j.finished]


def gather_window(s, jobs):
    """FLAGTREE_PROFILER_GATHER: each window's files go to rank 0 once written, so the caller waits."""
    if _env.gather_enabled():
        part_writer.wait(jobs)
        gather.after_finalize([s])


class _AfterRemoving:
    """A taken part whose write first removes the run's old metadata (session_outputs' order)."""

    def __init__(self, metadata_path, taken):
        self.metadata_path, self.taken = metadata_path, taken

    def write(self, path, **request):
        taken, self.taken = self.taken, None
        try:
            remove(self.metadata_path)
            return taken.write(path, **request)
        finally:  # not kept alive by a failed write's traceback (the part's error keeps it)
            del taken


class _Metadata:
    """The window's metadata, built and written on the writer thread after its parts."""

    def __init__(self, s, stats, facts, log):
        self.s, self.stats, self.facts, self.log = s, stats, facts, log
        self.number = s.window["windows"][-1]["window"]

    def write(self, path):
        s, log = self.s, self.log
        failed = [j for m in members(s) for j in m.part_jobs if j.error is not None]
        for job in failed:
            if job in part_writer.failed:  # warned of as the window's, not as a part
                part_writer.failed.remove(job)
            log.lost[job.path] = str(job.error)
        errors = [f"writing part {failed[0].path} failed: {failed[0].error}"] if failed else []
        if failed:  # counted in its own metadata's failed_windows
            log.lost_windows.append(self.number)
        try:
            write_metadata(path, metadata_json(self._metadata()))
        except Exception as error:  # its parts stand; the previous window's metadata is gone
            errors.append(f"writing its metadata {path} failed: {error}")
        if errors:
            if not failed:
                log.lost_windows.append(self.number)
            log.reports.append((self.number, "; ".join(errors)))
        return 0

    def _metadata(self):
        """As session_outputs.write_outputs' for a window, less every part lost so far."""
        s, log, stats = self.s, self.log, dict(self.stats)
        ordered = [p for m in members(s) for p in m.parts]
        for m in members(s):  # the lost parts of this window and of earlier ones leave the lists
            kept = [(p, steps) for p, steps in zip(m.parts, m.part_steps) if p not in log.lost]
            m.parts, m.part_steps = [p for p, _ in kept], [steps for _, steps in kept]
        stats["parts"] = [p for m in members(s) for p in m.parts]
        stats["part_times"] = [j.times() for m in members(s) for j in m.part_jobs if j.error is None]
        stats["part_queue_waits"] = sum(1 for m in members(s) for j in m.part_jobs if j.queue_wait_ns)
        if log.lost:
            stats["failed_parts"] = [{"path": p, "error": e} for p, e in log.lost.items()]
        window = dict(s.window)
        window["part_steps"] = [st for p, st in zip(ordered, window["part_steps"]) if p not in log.lost]
        window["windows"] = [{**w, "parts": [p for p in w["parts"] if p not in log.lost]} for w in window["windows"]]
        window["failed_windows"] += len(log.lost_windows)
        stats.update(window)
        return {**build_metadata(s, self.facts, stats), **run_facts(s)}
