"""Running a test's work on several threads at once, with any thread's error raised in the test."""
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
