"""Threads inherit the context of the thread that started them.

While a session is open, ``threading.Thread.start`` takes a snapshot of the starting thread's
context (its scope stack with what it inherited itself, its innermost state and its Python
frames); the new thread adopts it before its ``run``. Launches it makes on an empty scope stack
go under that snapshot, and scopes it enters nest under it. The snapshot is frozen at start():
scopes the starter enters later are not seen (a pool thread keeps the context of the call that
created it, not of each task). Threads started before the first session opened, and threads not
started through ``threading`` (autograd's engine threads, C++ threads) follow the driving-thread
rule instead (hooks/autograd.py).
"""
import threading
from ..native_core import native

_original_start = None


def _start(thread):
    # Held in a list the new thread empties: once adopted, the snapshot is the native side's
    # alone. A daemon thread still running at exit would otherwise keep the Python object past
    # the module's teardown (nanobind then reports it leaked).
    snapshot = [native.context.context_snapshot(True)]
    run = thread.run

    def run_inheriting():
        try:
            del thread.run  # back to the class's run: no cycle through the thread object
        except AttributeError:
            pass
        native.context.context_adopt(snapshot.pop())
        return run()

    thread.run = run_inheriting
    try:
        _original_start(thread)
    except BaseException:
        try:
            del thread.run
        except AttributeError:
            pass
        raise


def install():
    global _original_start
    if _original_start is not None:
        return
    _original_start = threading.Thread.start

    def start(self):
        _start(self)

    start.__wrapped__ = _original_start
    start.__doc__ = _original_start.__doc__
    threading.Thread.start = start


def uninstall():
    global _original_start
    if _original_start is None:
        return
    if getattr(threading.Thread.start, "__wrapped__", None) is _original_start:
        threading.Thread.start = _original_start
    _original_start = None
