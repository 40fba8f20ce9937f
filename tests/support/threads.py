"""Running a test's work on several threads at once, with any thread's error raised in the test;
and a thread that imitates autograd's engine thread (not started through threading.Thread)."""
import _thread
import threading


def run_threads(work, args):
    """Runs work(arg) on one thread per arg, waits for all, then raises the first error."""
    errors = []

    def guarded(arg):
        try:
            work(arg)
        except BaseException as error:  # re-raised below, on the test's thread
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(arg,)) for arg in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


class ForeignThread:
    """A thread started with _thread.start_new_thread, as a C++ library (autograd's engine)
    starts its own: threading.Thread.start never sees it. call(fn) runs fn there and waits."""

    def __init__(self):
        self._jobs = []
        self._ready = threading.Condition()
        self._stopped = False
        _thread.start_new_thread(self._loop, ())

    def _loop(self):
        while True:
            with self._ready:
                while not self._jobs and not self._stopped:
                    self._ready.wait()
                if not self._jobs:
                    return
                fn, done, box = self._jobs.pop(0)
            try:
                box["result"] = fn()
            except BaseException as error:
                box["error"] = error
            done.set()

    def call(self, fn):
        done, box = threading.Event(), {}
        with self._ready:
            self._jobs.append((fn, done, box))
            self._ready.notify()
        assert done.wait(timeout=60), "the foreign thread did not finish its job"
        if "error" in box:
            raise box["error"]
        return box.get("result")

    def stop(self):
        with self._ready:
            self._stopped = True
            self._ready.notify()
