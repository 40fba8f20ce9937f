"""schedule() and step(): collection by steps, in the manner of ``torch.profiler.schedule``:
``schedule(...)`` says which steps are recorded and ``step()`` (session.py) ends one step.

Steps are counted from 0 at start(). After ``skip_first`` steps, cycles of ``wait`` + ``warmup`` +
``active`` steps follow, ``repeat`` of them (0: until finalize). In wait and warmup steps the
session is deactivated (launches are not recorded). Warmup is deactivated too, not recorded and
dropped: the native core has no way to discard what it collected short of writing it, and a
warmup's purpose here (the program's first launches, compilation, caches) is served all the
same. Each cycle's active steps end in one part (``<name>.part<k>.hatchet``) whose ``steps`` lists
those step numbers; after the last cycle the session stays deactivated until finalize.

When a quiet stretch begins, the backend hears about how long it will last
(Backend.quiet_ahead): at the pace of the last quiet stretch (the first one's own first
PACE_STEPS steps), or forever when no window comes.
"""
import math
import time

from . import part_writer
from .native_core import native
from .run_group import members

ARGUMENTS = ("wait", "warmup", "active", "repeat", "skip_first")
# Less than a step() call takes: the pace of steps not measured yet, which underestimates how long
# a quiet stretch lasts (a huge skip_first is still known to be long).
STEP_CALL_S = 1e-7
PACE_STEPS = 32  # the steps of a first quiet stretch that measure its pace


class Schedule:
    """What ``schedule()`` returns; ``action(step)`` is "skip", "wait", "warmup", "active" or
    "done", and ``window_ends(step)`` whether the step is the last of an active window."""

    def __init__(self, wait, warmup, active, repeat, skip_first):
        self.wait, self.warmup, self.active = wait, warmup, active
        self.repeat, self.skip_first = repeat, skip_first

    def __repr__(self):
        return "schedule(" + ", ".join(f"{n}={getattr(self, n)}" for n in ARGUMENTS) + ")"

    def action(self, step):
        if step < self.skip_first:
            return "skip"
        step -= self.skip_first
        cycle = self.wait + self.warmup + self.active
        if self.repeat and step // cycle >= self.repeat:
            return "done"
        within = step % cycle
        if within < self.wait:
            return "wait"
        return "warmup" if within < self.wait + self.warmup else "active"

    def next_active(self, step):
        """The first step from `step` on whose action is "active"; None when none comes."""
        if step < self.skip_first:
            step = self.skip_first
        cycle = self.wait + self.warmup + self.active
        index, within = divmod(step - self.skip_first, cycle)
        within = max(within, self.wait + self.warmup)
        if self.repeat and index >= self.repeat:
            return None
        return self.skip_first + index * cycle + within

    def window_ends(self, step):
        cycle = self.wait + self.warmup + self.active
        return self.action(step) == "active" and (step - self.skip_first) % cycle == cycle - 1


def schedule(*, wait=0, warmup=0, active=1, repeat=0, skip_first=0):
    """A schedule for ``start(..., schedule=...)``: skip ``skip_first`` steps, then repeat
    ``wait`` steps unrecorded, ``warmup`` steps unrecorded, ``active`` steps recorded into one part,
    ``repeat`` times (0: until finalize). Raises ValueError on a bad argument."""
    values = {"wait": wait, "warmup": warmup, "active": active, "repeat": repeat, "skip_first": skip_first}
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"schedule: {name} must be an int, not {type(value).__name__} ({value!r})")
        if value < (1 if name == "active" else 0):
            need = "at least 1" if name == "active" else "0 or more"
            raise ValueError(f"schedule: {name}={value}: {name} must be {need}")
    return Schedule(**values)


def check(plan):
    """start()'s ``schedule=``: None or what schedule() returned."""
    if plan is not None and not isinstance(plan, Schedule):
        raise ValueError(f"schedule= takes what flagtree.profiler.schedule(...) returns, not {plan!r}")


class Stepping:
    """One scheduled session's place in its schedule: the current step and the steps of the
    active window being collected."""

    def __init__(self, plan):
        self.plan = plan
        # The current step, and below its limit the steps that change nothing (a wait, warmup,
        # skip or done stretch): step() only counts them, without session.py's lock
        # (count.tick_below()). activate() and deactivate() reset the limit (steady_until), so
        # the next step re-applies the schedule.
        self.count = native.core.StepCount()
        self.steady_until = 0
        self.window = []
        # The quiet stretch under way (its first step, and when it began), and the seconds a
        # step of the last one measured took (None: none yet): how far the next window is.
        self.quiet_from = None
        self.quiet_step_s = None
        self.wake_at = None  # the step that tells the backend its window is near (wake_ahead)

    @property
    def step(self):
        return self.count.value

    @property
    def steady_until(self):
        limit = self.count.limit
        return math.inf if limit == self.count.NO_LIMIT else limit

    @steady_until.setter
    def steady_until(self, step):
        # A step past the native count's range (a skip_first of 2**70, say) is never reached either.
        self.count.limit = min(step, self.count.NO_LIMIT)


def set_active(session, active):
    """Activates or deactivates `session` and its companions (schedules, activate(), deactivate());
    its backend hears of a change (Backend.activity_changed)."""
    changed = native.session.session_is_active(session.slot) != active
    for m in members(session):
        native.session.session_set_active(m.slot, active)
    if changed:
        session.backend.activity_changed()


def begin(session, plan):
    """At start(): the session, made inactive, follows `plan` from step 0."""
    session.stepping = Stepping(plan)
    for m in members(session):
        m.stepping = session.stepping
    _enter(session)
    if not native.session.session_is_active(session.slot):
        session.backend.activity_changed()  # made inactive: set_active saw no change to report


def _enter(session):
    stepping = session.stepping
    active = stepping.plan.action(stepping.step) == "active"
    if active:
        _end_quiet(stepping)
        stepping.window.append(stepping.step)
        # The previous window's close may still run on the writer thread: it takes its part
        # before this window records anything.
        part_writer.wait_closed(j for m in members(session) for j in m.part_jobs[-1:])
        set_active(session, True)
        return
    upcoming = stepping.plan.next_active(stepping.step)
    stepping.steady_until = math.inf if upcoming is None else upcoming
    set_active(session, False)
    if stepping.quiet_from is None:
        stepping.quiet_from = (stepping.step, time.perf_counter())
    if stepping.wake_at is not None and stepping.step >= stepping.wake_at:
        stepping.wake_at = None
        session.backend.wake_ahead()
        return
    _first_pace(stepping, upcoming)
    lead = session.backend.quiet_ahead(_seconds_to(stepping, upcoming))
    _plan_wake(stepping, upcoming, lead)


def _plan_wake(stepping, upcoming, lead):
    """The backend let go for the stretch and asks to be told `lead` seconds before its window:
    the step that many seconds ahead, at the stretch's pace, comes back here (steady_until)."""
    stepping.wake_at = None
    if lead is None or upcoming is None or not stepping.quiet_step_s:
        return
    wake_at = upcoming - math.ceil(lead / stepping.quiet_step_s)
    if wake_at > stepping.step:
        stepping.wake_at = wake_at
        stepping.steady_until = min(stepping.steady_until, wake_at)


def _first_pace(stepping, upcoming):
    """The first quiet stretch has no earlier one to go by: its first PACE_STEPS steps give the
    pace, and the step after them comes back here (steady_until) to reckon the rest."""
    if stepping.quiet_step_s is not None:
        return
    first = stepping.quiet_from[0]
    if stepping.step - first >= PACE_STEPS:
        stepping.quiet_step_s = _stretch_pace(stepping)
    elif upcoming is not None and upcoming > first + PACE_STEPS:
        stepping.steady_until = first + PACE_STEPS


def _end_quiet(stepping):
    """A window opens: the quiet stretch before it says how long a quiet step takes."""
    stepping.wake_at = None  # the steps came faster than their pace: the window wakes it
    if stepping.quiet_from is None:
        return
    if stepping.step > stepping.quiet_from[0]:
        stepping.quiet_step_s = _stretch_pace(stepping)
    stepping.quiet_from = None


def _stretch_pace(stepping):
    """Seconds a step of the quiet stretch under way has taken so far (one step or more)."""
    first, began = stepping.quiet_from
    return (time.perf_counter() - began) / (stepping.step - first)


def _seconds_to(stepping, upcoming):
    """About how long until step `upcoming` (None: never, math.inf), at the pace of the last quiet
    stretch; before one was measured, at least as long as that many calls of step()."""
    if upcoming is None:
        return math.inf
    pace = stepping.quiet_step_s if stepping.quiet_step_s is not None else STEP_CALL_S
    return (upcoming - stepping.step) * pace


def unsteady(session):
    """activate() or deactivate() changed `session` by hand: its next step applies the schedule."""
    if session.stepping is not None:
        session.stepping.steady_until = 0


def advance(session, write_part):
    """Ends the current step: the last step of an active window writes the window as one part
    (`write_part(session)`, session.py's flush); then the next step's action applies. Returns the
    paths written."""
    stepping = session.stepping
    if stepping.count.tick_below():  # a step of a serving loop between windows: counted only
        return []
    written = []
    if stepping.plan.window_ends(stepping.step):
        # A window followed at once by the next (no wait or warmup step between) stays active
        # through its close: this thread waits in _enter until the part is taken, so only other
        # threads launch meanwhile, and their launches belong to one window or the other. Paused,
        # they were lost, and CUPTI went quiet and woke again at every part.
        if stepping.plan.action(stepping.step + 1) != "active":
            set_active(session, False)
        written = write_part(session)
        stepping.window = []
    stepping.count.tick()
    _enter(session)
    return written


def part_steps(session):
    """The step numbers the part being written holds; None for an unscheduled session."""
    stepping = session.stepping
    return None if stepping is None else list(stepping.window)
