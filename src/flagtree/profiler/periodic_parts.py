"""FLAGTREE_PROFILER_PERIODIC_S: a thread per session that writes a part every so many seconds
(session.py's flush_part, on a timer), so that a long run keeps bounded memory without calls
in the program."""
import threading
import warnings

from .session_outputs import warn_of_failed_parts, write_parts


def start_timer(session, interval, lock, sessions):
    """Starts `session`'s part timer; `lock` and `sessions` are session.py's lock and open
    sessions, under which each part is taken. session.timer_stop ends it."""
    stop = threading.Event()
    session.timer_stop = stop

    def run():
        while not stop.wait(interval):
            with lock:
                if stop.is_set() or sessions.get(session.id) is not session:
                    return
                warn_of_failed_parts([session])  # the previous periodic part's, if it failed
                try:
                    write_parts([session], sessions.values())
                except Exception as error:  # the program goes on; the next part tries again
                    warnings.warn(f"flagtree.profiler: periodic part of session {session.id} failed: {error}")

    thread = threading.Thread(target=run, name=f"flagtree-profiler-parts-{session.id}", daemon=True)
    thread.start()
