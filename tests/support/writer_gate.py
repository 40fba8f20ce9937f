"""Holding the part writer's thread (part_writer.hold, its seam for tests) until a test lets it go."""
import threading

WAIT_S = 30  # a bound on waits that end at once when the code works


class Gate:
    """Holds the writer thread before each part's close and write until opened; records the
    paths it was given."""

    def __init__(self):
        self.opened, self.entered = threading.Event(), threading.Event()
        self.seen = []

    def __call__(self, job):
        self.seen.append(job.path)
        self.entered.set()
        assert self.opened.wait(WAIT_S)
