"""`--schedule`, `--trigger` and `--window`: which part of the run is recorded (trigger_text.py
reads the texts; FLAGTREE_PROFILER_TRIGGER and _WINDOW stand in for the last two)."""
import argparse

from .. import _env
from ..trigger_text import parse_schedule, parse_trigger, parse_window


def _typed(parse):
    def convert(text):
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return convert


def add_window_options(parser):
    parser.add_argument("--schedule", type=_typed(parse_schedule), metavar="wait=W,warmup=U,active=A,...",
                        help="record only the steps a schedule picks (the script calls flagtree.profiler.step() "
                             "at each step's end): wait, warmup, active, repeat, skip_first; one part per active window")
    parser.add_argument("--trigger", type=_typed(parse_trigger), metavar="signal[:SIG]|file:PATH|steps:A-B",
                        help="run armed and idle: each signal (USR1 by default), touch of PATH, or step range opens "
                             "a window, written as one part (default: FLAGTREE_PROFILER_TRIGGER)")
    parser.add_argument("--window", type=_typed(parse_window), metavar="steps=N|seconds=T",
                        help="how long a signal or file trigger's window stays open (default: "
                             "FLAGTREE_PROFILER_WINDOW, else seconds=10)")


def check_window_options(options):
    """ValueError for a combination the three do not allow (the command's usage error); a
    trigger or window from the environment fills the options (its errors name the variable)."""
    if options.trigger is None and _env.trigger():
        try:
            options.trigger = parse_trigger(_env.trigger())
        except ValueError as error:
            raise ValueError(f"FLAGTREE_PROFILER_TRIGGER: {error}") from None
    if options.trigger is not None and options.window is None and _env.window():
        try:
            options.window = parse_window(_env.window())
        except ValueError as error:
            raise ValueError(f"FLAGTREE_PROFILER_WINDOW: {error}") from None
    if options.window is not None and options.trigger is None:
        raise ValueError("--window needs a trigger (--trigger or FLAGTREE_PROFILER_TRIGGER)")
    if options.schedule is not None and options.trigger is not None:
        raise ValueError("--schedule and a trigger cannot be combined: a trigger's window is its own schedule")
    if options.trigger is not None and options.trigger.kind == "steps" and options.window is not None:
        raise ValueError(f"--trigger {options.trigger} is its own window: --window applies to signal and file triggers")
