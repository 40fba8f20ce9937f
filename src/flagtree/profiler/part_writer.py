"""The one background thread that writes parts. When a window closes (step(), flush_part(), a
periodic part), the caller's thread only flushes the backends and takes the part's data out of
its session (session_outputs.py, ``native.dump.session_take_part``); the serialization and the
disk happen here, with the GIL released in the native writer, in the order the parts were handed
over. A schedule's window on backends whose flush may run off the caller's thread
(``Backend.flush_off_thread``) is closed here too (PartJob.take: the flush and the take): its
session is deactivated, so nothing recorded later can land in it, and its next window, another
part of it and its finalize wait for that close first (session_outputs.wait_for_closes).

Memory stays bounded: at most MAX_PENDING parts wait to be written (the one being written among
them). A caller that would hand over one more waits, holding its part, until the oldest is
written; the time it waited is kept on its part (``queue_wait_ns`` in the metadata's
``part_times``). It takes its part before it waits: the part holds what came before the flush.
finalize() waits for a session's parts before it writes the rest (session_outputs.write_outputs),
so interpreter exit, which finalizes what is open, loses nothing. A failed write is kept on its
part: session.py warns of it at the next step() or flush_part() (flush_part(wait=True) raises
it), and finalize raises it.
"""
import os
import queue
import threading

from .native_core import native

MAX_PENDING = 4

# A seam for tests: when set, called on the writer thread with each part before it is closed (a
# deferred close, see PartJob.take) and written (a test blocks it on an Event to make the writer
# observably slow). None otherwise.
hold = None


# Parts whose write failed and that nobody has warned of yet (session_outputs.py takes them).
failed = []


class PartJob:
    """One part: its path, the taken data until written, and what the metadata says of it."""

    def __init__(self, owner, path, steps, taken=None, request=None, take=None):
        self.owner = owner  # the Session whose part it is
        self.path = path
        self.steps = steps  # the scheduled steps it holds (schedule_steps.py), None when unscheduled
        self.taken = taken  # native.dump.TakenPart, dropped once written
        self.request = request  # the writer's keyword arguments (writers/profile.py)
        # A deferred close: called on the writer thread before the write, it flushes and returns
        # the TakenPart and the request; `closed` is set once it has run (the session's next
        # window waits for it).
        self.take = take
        self.closed = threading.Event()
        if take is None:
            self.closed.set()
        self.caller_ns = 0  # from the window's close to the part handed over, on the caller's thread
        self.queue_wait_ns = 0  # of which waiting for room among the MAX_PENDING
        self.take_ns = None  # a deferred close's flush and take, on the writer thread
        self.write_ns = None  # the write on the writer thread
        self.error = None
        self.finished = taken is None and take is None  # written or failed (set by the writer thread)

    def times(self):
        """The part's entry in the metadata's ``part_times``."""
        times = {"caller_ns": self.caller_ns, "queue_wait_ns": self.queue_wait_ns, "write_ns": self.write_ns}
        if self.take_ns is not None:
            times["take_ns"] = self.take_ns
        return times


class _Writer:
    def __init__(self):
        self.jobs = queue.SimpleQueue()  # the hand-over: C-level, so a caller's put is short
        self.lock = threading.Lock()
        self.written = threading.Condition(self.lock)  # notified as each part is written
        self.pending = []  # handed over, not yet written, oldest first (under lock)
        self.thread = None

    def submit(self, job):
        """Hands `job` over; waits while MAX_PENDING parts are pending. Returns the ns waited."""
        waited = 0
        with self.lock:
            if len(self.pending) >= MAX_PENDING:
                began = native.core.monotonic_ns()
                self.written.wait_for(lambda: len(self.pending) < MAX_PENDING)
                waited = native.core.monotonic_ns() - began
            self.pending.append(job)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="flagtree-profiler-writer", daemon=True)
                self.thread.start()
        self.jobs.put(job)
        return waited

    def _run(self):
        while True:
            job = self.jobs.get()
            _write(job)
            with self.lock:
                self.pending.remove(job)
                job.finished = True
                self.written.notify_all()

    def wait(self, jobs):
        with self.lock:
            for job in jobs:
                self.written.wait_for(lambda job=job: job.finished)

    def forked(self):
        """In a forked child: the parent's writer thread is not here; its pending parts fail."""
        for job in self.pending:
            job.error = RuntimeError("the process forked before this part was written (in the parent)")
            job.taken = job.take = None
            job.finished = True
            job.closed.set()
        self.__init__()


def _close(job):
    """A deferred close: the flush and the take, on this thread; `closed` is set however it ends."""
    began = native.core.monotonic_ns()
    try:
        job.taken, job.request = job.take()
    finally:
        job.take_ns = native.core.monotonic_ns() - began
        job.take = None
        job.closed.set()


def _write(job):
    try:
        if hold is not None:
            hold(job)
        if job.take is not None:
            _close(job)
        began = native.core.monotonic_ns()
        job.taken.write(os.fspath(job.path), **job.request)
        job.write_ns = native.core.monotonic_ns() - began
    except Exception as error:  # kept on the part: reported by session.py, raised by finalize
        job.error = error
        failed.append(job)
    finally:  # its memory goes now (TakenPart.write frees the data once written, too)
        job.taken = job.request = None


_writer = _Writer()
os.register_at_fork(after_in_child=_writer.forked)


def submit(job):
    """Hands a taken part to the writer thread; returns the ns the caller waited for room."""
    return _writer.submit(job)


def wait(jobs):
    """Returns once every one of `jobs` is written (or failed)."""
    _writer.wait(jobs)


def wait_closed(jobs):
    """Returns once every deferred close among `jobs` has run (taken, or failed). Closes run in
    the order parts were handed over: a session's last part stands for all of its earlier ones."""
    for job in jobs:
        job.closed.wait()
