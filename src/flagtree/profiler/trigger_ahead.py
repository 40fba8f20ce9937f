"""A steps trigger knows where its next window begins, so its backend may prepare the window's
start ahead, off the program's thread (Backend.window_lead, prepare_window: the nvidia backend
attaches CUPTI parked). WindowAhead reckons when: the steps to the window at the pace of the
steps since the last window closed (or, before the first window, of the first PACE_STEPS steps
after arm()), the backend's lead ahead of it. The backend is the one arm() named, else the last
window's (none before the first window: arm() selects no backend)."""
import math
import time

PACE_STEPS = 32  # before the first window: the steps after arm() that measure the pace


class WindowAhead:
    """Kept by an Armed run of a steps trigger, under its lock."""

    def __init__(self, backend, next_range):
        self.backend = backend
        self.quiet_from = (0, time.perf_counter())  # the stretch under way: its first step, when
        self.step_s = None  # a quiet step's seconds, from the last stretch
        self.prepare_at = -1  # the step at which the backend prepares (-1: none planned)
        self.pace_at = PACE_STEPS if backend is not None and next_range > PACE_STEPS else -1

    def lock_from(self, next_range):
        """The first step that step() must see under the lock: the window's, or an earlier one
        at which this plans or prepares (-1: none)."""
        due = [s for s in (next_range, self.prepare_at, self.pace_at) if s >= 0]
        return min(due) if due else -1

    def on_step(self, step, next_range):
        """Step `step` begins with no window open: measure the first pace, or prepare."""
        if 0 <= self.pace_at <= step:
            self.pace_at = -1
            self._pace(step)
            if self._plan(step, next_range):
                self.prepare_at = step
        if 0 <= self.prepare_at <= step and step < next_range:
            self.prepare_at = -1
            self.backend.prepare_window()

    def opened(self, step):
        """A window opens at `step`: the stretch before it gives the pace."""
        self.prepare_at = self.pace_at = -1
        self._pace(step)

    def closed(self, backend, last_step, next_range):
        """The window closed at `last_step`; the next opens at `next_range` (-1: none). True when
        it is so near that what the backend holds should stay (not let go at the close)."""
        self.backend, self.quiet_from = backend, (last_step + 1, time.perf_counter())
        return self._plan(last_step + 1, next_range)

    def _pace(self, step):
        first, began = self.quiet_from
        if step > first:
            self.step_s = (time.perf_counter() - began) / (step - first)

    def _plan(self, step, next_range):
        """From `step`: the step at which to prepare the window at `next_range` (prepare_at); True
        when that is `step` or earlier (prepare now)."""
        self.prepare_at = -1
        lead = self.backend.window_lead() if next_range >= 0 and self.step_s and self.backend else None
        if lead is None:
            return False
        at = next_range - math.ceil(lead / self.step_s)
        if at <= step:
            return True
        self.prepare_at = at
        return False
