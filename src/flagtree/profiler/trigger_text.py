"""The texts that choose which part of a run is recorded, one grammar for the command line, the
environment and the Python API (trigger.py):

    schedule  wait=W,warmup=U,active=A,repeat=R,skip_first=S   (any subset; schedule()'s defaults)
    trigger   signal[:NAME]         NAME: USR1 (default), USR2 or HUP, with or without SIG
              file:PATH             the file's modification time changes (touch PATH)
              steps:A-B[,C-D...]    steps A to B (counted by step(), from 0): the range is the window
    window    steps=N | seconds=T   how long a signal or file trigger's window stays open

Each parse returns a value or raises ValueError with the text, what is wrong and the forms.
"""
import math
import os
import signal
from typing import NamedTuple

from .schedule_steps import ARGUMENTS, schedule

SIGNALS = ("SIGUSR1", "SIGUSR2", "SIGHUP")
TRIGGER_FORMS = "signal[:USR1|USR2|HUP], file:PATH or steps:A-B[,C-D...]"
WINDOW_FORMS = "steps=N (N >= 1) or seconds=T (0 < T <= 604800)"
SCHEDULE_FORMS = "wait=W,warmup=U,active=A,repeat=R,skip_first=S (any of them, integers)"
# A signal or file trigger without a window: seconds, since a program need not call step().
DEFAULT_WINDOW = "seconds=10"
MAX_SECONDS = 7 * 24 * 3600.0


class Trigger(NamedTuple):
    """What opens a window: kind "signal" (signal: its name), "file" (path: absolute) or "steps"
    (ranges: ascending, disjoint (first, last) pairs of step numbers)."""
    kind: str
    signal: object = None
    path: object = None
    ranges: tuple = ()

    def __str__(self):
        if self.kind == "signal":
            return f"signal:{self.signal}"
        if self.kind == "file":
            return f"file:{self.path}"
        return "steps:" + ",".join(f"{a}-{b}" for a, b in self.ranges)

    @property
    def signum(self):
        return getattr(signal, self.signal)


class Window(NamedTuple):
    """How long a window stays open: unit "steps" (amount: an int) or "seconds" (a float)."""
    unit: str
    amount: object

    def __str__(self):
        return f"{self.unit}={self.amount:g}" if self.unit == "seconds" else f"steps={self.amount}"


def _int(text, what, forms):
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise ValueError(f"{what}: {text.strip()!r} is not an integer; use {forms}") from None


def parse_schedule(text):
    """'wait=1,active=2' -> what schedule(wait=1, active=2) returns."""
    values = {}
    for item in str(text).split(","):
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or key not in ARGUMENTS:
            raise ValueError(f"schedule {text!r}: {item.strip()!r} is not one of {SCHEDULE_FORMS}")
        if key in values:
            raise ValueError(f"schedule {text!r} gives {key} twice")
        values[key] = _int(value, f"schedule {text!r}, {key}", SCHEDULE_FORMS)
    return schedule(**values)


def _signal_name(text, whole):
    name = text.strip().upper()
    name = name if name.startswith("SIG") else "SIG" + name
    if name not in SIGNALS:
        raise ValueError(f"trigger {whole!r}: {text.strip()!r} is not a signal a trigger takes (USR1, USR2, HUP: "
                         f"the others end, stop or already serve the program)")
    return name


def _ranges(text, whole):
    ranges = []
    for item in text.split(","):
        low, dash, high = item.partition("-")
        first = _int(low, f"trigger {whole!r}", TRIGGER_FORMS)
        last = _int(high, f"trigger {whole!r}", TRIGGER_FORMS) if dash else first
        if first < 0 or last < first:
            raise ValueError(f"trigger {whole!r}: {item.strip()!r} is not a range of steps A-B with 0 <= A <= B")
        if ranges and first <= ranges[-1][1]:
            raise ValueError(f"trigger {whole!r}: the step ranges must ascend without overlapping")
        ranges.append((first, last))
    return tuple(ranges)


def parse_trigger(text):
    """'signal', 'signal:USR2', 'file:/tmp/go', 'steps:10-12,50-52' -> Trigger."""
    if isinstance(text, Trigger):
        return text
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"trigger {text!r}: give one of {TRIGGER_FORMS}")
    kind, colon, rest = text.strip().partition(":")
    if kind == "signal":
        return Trigger("signal", signal=_signal_name(rest, text) if colon else "SIGUSR1")
    if kind == "file" and rest.strip():
        return Trigger("file", path=os.path.abspath(rest.strip()))
    if kind == "steps" and rest.strip():
        return Trigger("steps", ranges=_ranges(rest, text))
    raise ValueError(f"trigger {text!r} is none of {TRIGGER_FORMS}")


def parse_window(text):
    """'steps=3' or 'seconds=2.5' -> Window."""
    if isinstance(text, Window):
        return text
    unit, equals, value = str(text).strip().partition("=")
    unit = unit.strip()
    if not equals or unit not in ("steps", "seconds"):
        raise ValueError(f"window {text!r} is not one of {WINDOW_FORMS}")
    if unit == "steps":
        amount = _int(value, f"window {text!r}", WINDOW_FORMS)
        if amount < 1:
            raise ValueError(f"window {text!r}: a window holds at least 1 step")
        return Window("steps", amount)
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"window {text!r}: {value.strip()!r} is not a number of seconds; use {WINDOW_FORMS}") from None
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS):
        raise ValueError(f"window {text!r}: seconds must be above 0 and at most {MAX_SECONDS:.0f} (a week)")
    return Window("seconds", seconds)


def trigger_and_window(trigger_text, window_text):
    """(Trigger, Window or None): a steps trigger is its own window, so it takes none; a signal or
    file trigger without one gets DEFAULT_WINDOW."""
    trigger = parse_trigger(trigger_text)
    if trigger.kind == "steps":
        if window_text is not None:
            raise ValueError(f"trigger {str(trigger)!r} is its own window: a window applies to signal and file "
                             f"triggers only")
        return trigger, None
    return trigger, parse_window(DEFAULT_WINDOW if window_text is None else window_text)
