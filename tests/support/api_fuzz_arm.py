"""The stateful API fuzz's trigger ops (arm(), disarm(), a signal sent to the process, a loop of
steps) and their model: an armed run's step count, its ranges not opened yet, its window (a Record
among the sequence's sessions while its session is open, since a window is a session: it takes an
id, counts towards the open sessions, is activated, deactivated and finalized with every session)
and the windows it closed. At disarm() every window's parts are checked against the launches made
while it recorded (their kernel counts summed per data kind), its steps and what closed it against
the model's, and the metadata's `windows` and `part_steps` against the armed run's."""
import collections
import os
import signal

import flagtree.profiler as profiler
from flagtree.profiler import session as sessions
from flagtree.profiler.native_core import native
from support.api_fuzz_model import Misbehaved, base_of, data_kinds, name_refused
from support.api_fuzz_written import check_python_paths, kernels_in
from support.json_check import load_strict


def parse_ranges(text):
    """The ranges of a trigger text the planner made, or None when it is not a good steps trigger."""
    if not isinstance(text, str) or not text.startswith("steps:"):
        return None
    ranges = []
    for item in text[6:].split(","):
        a, _, b = item.partition("-")
        if not (a.isdigit() and b.isdigit()) or int(a) > int(b) or (ranges and int(a) <= ranges[-1][1]):
            return None
        ranges.append((int(a), int(b)))
    return ranges


class ArmModel:
    """One armed run as the model sees it."""

    def __init__(self, armed, ranges, window_steps, options, base):
        self.armed, self.ranges, self.window_steps = armed, list(ranges or ()), window_steps
        self.options, self.base = options, base
        self.kinds = data_kinds(options["data"])
        self.step = 0  # the step in progress: step() calls since arm()
        self.window = None  # (Record or None when it could not open, first step, last step)
        self.pending = False  # a signal came; its window opens at the next step()
        self.unnoted = 0  # signals since the last step(): the watcher thread may not have taken them yet
        self.closed = []  # (Record, first step, last step, closed_by) of each window closed
        self.ignored = 0
        self.failures = 0


class ArmOps:
    """Mixed into the sequence (api_fuzz_run.Sequence): its records, add_record, call and op_step."""

    def op_arm(self, trigger, window, label, options):
        ranges = parse_ranges(trigger)
        good_trigger = ranges is not None and window is None or trigger == "signal:USR2" and window in (
            "steps=1", "steps=2", "steps=3")
        refused = (self.arm is not None or not good_trigger or name_refused(label, self.folder)
                   or options.get("context") not in ("shadow", "python") or data_kinds(options["data"]) is None
                   or options.get("backend") not in ("interpreter", None))
        name = label if not label else os.path.join(self.folder, label)
        armed = self.call(f"arm({trigger!r}, {window!r}, {label!r}, {options})",
                          lambda: profiler.arm(trigger, window, name=name, **options), expected=refused)
        if self.disabled:
            if armed is not None:
                raise Misbehaved(f"arm() with profiling disabled returned {armed!r}, not None")
            return
        if refused:
            return
        steps = int(window[6:]) if window else None
        self.arm = ArmModel(armed, ranges, steps, options, base_of(self.folder, label))
        if ranges and ranges[0][0] == 0:  # a range from step 0 opens its window in arm()
            self.open_window(self.arm.ranges.pop(0)[1], 0)

    def open_window(self, last, first):
        """A window opens at step `first` (till `last`): a session with the armed options, or a
        failure where the sessions open leave no room for its data kinds."""
        arm = self.arm
        used = sum(len(r.kinds) for r in self.open_records())
        if used + len(arm.kinds) > native.MAX_SESSIONS:
            arm.failures += 1
            return
        sid = max(sessions.open_sessions())
        label = os.path.relpath(arm.base, self.folder)
        self.add_record(sid, label, arm.kinds, arm.options["context"], None)
        record = self.records[-1]
        record.window = True
        record.hook = arm.options.get("hook") == "triton" and arm.options.get("backend") in ("interpreter", None)
        arm.window = (record, first, last)

    def close_window(self, closed_by, last_step):
        record, first, _ = self.arm.window
        self.arm.window = None
        if record is None:
            return
        if record.open:
            record.open = False
        else:
            closed_by = "finalize()"  # the program's finalize() closed its session first
        self.arm.closed.append((record, first, last_step, closed_by))

    def arm_step(self):
        """step(), whatever its id or thread: the armed run counts it, closes and opens windows."""
        arm = self.arm
        if arm is None:
            return
        ended = arm.step
        arm.step += 1
        self.note_signals()
        if arm.window is not None and ended >= arm.window[2]:
            self.close_window("steps", ended)
        if arm.window is None and arm.ranges and arm.ranges[0][0] == ended + 1:
            self.open_window(arm.ranges.pop(0)[1], ended + 1)
        elif arm.window is None and arm.pending:
            arm.pending = False
            self.open_window(ended + arm.window_steps, ended + 1)

    def op_signal(self):
        """SIGUSR2 to this process, only while a signal trigger is armed (else it would end it)."""
        arm = self.arm
        if arm is None or arm.window_steps is None:
            return
        os.kill(os.getpid(), signal.SIGUSR2)  # the handler counts at once, on this (the main) thread
        arm.unnoted += 1

    def note_signals(self):
        """step() takes the signals the watcher thread has not: each opens a window or is ignored."""
        arm = self.arm
        for _ in range(arm.unnoted):
            if arm.window is not None or arm.pending:
                arm.ignored += 1
            else:
                arm.pending = True
        arm.unnoted = 0

    def op_signal_loop(self, count, ctx):
        for _ in range(count):
            self.op_signal()
            self.op_step_loop(1, ctx)

    def op_step_loop(self, count, ctx):
        for _ in range(count):
            self.op_launch("add", ctx=ctx)
            self.op_step(("all",))

    def op_disarm(self):
        written = self.call("disarm()", profiler.disarm, expected=False)
        if not isinstance(written, list):
            raise Misbehaved(f"disarm() returned {written!r}, not a list")
        arm, self.arm = self.arm, None
        if arm is None:
            if written:
                raise Misbehaved(f"disarm() with nothing armed wrote {written}")
            return
        # Signals since the last step() are ignored ones only if the watcher took them before
        # disarm() stopped it: the first of them opens nothing but makes the others ignored.
        arm.unnoted -= arm.unnoted > 0 and arm.window is None and not arm.pending
        self.arm = arm
        if arm.window is not None:
            self.close_window("exit", arm.step)
        self.arm = None
        check_windows(arm)


def check_windows(arm):
    """After disarm(): every window closed, its parts holding the launches made while it recorded."""
    armed = arm.armed
    where = f"armed run {armed!r}"
    if armed.step != arm.step or not arm.ignored <= armed.ignored_triggers <= arm.ignored + arm.unnoted \
            or armed.failed_windows != arm.failures:
        raise Misbehaved(f"{where}: step {armed.step}, {armed.ignored_triggers} ignored triggers, "
                         f"{armed.failed_windows} failed windows; the model's {arm.step}, {arm.ignored}, "
                         f"{arm.failures}")
    found = [(w["window"], w["steps"], w["closed_by"]) for w in armed.windows]
    expected = [(k + 1, list(range(first, last + 1)), by) for k, (_, first, last, by) in enumerate(arm.closed)]
    if found != expected:
        raise Misbehaved(f"{where}: windows {found}, the model's {expected}")
    for entry, (record, _, _, _) in zip(armed.windows, arm.closed):
        check_window_parts(where, entry, record)
    if armed.windows and os.path.isfile(arm.closed[-1][0].metadata):  # named as its session's (by data kind)
        meta = load_strict(arm.closed[-1][0].metadata)
        if "windows" in meta:
            check_window_metadata(where, meta, armed.windows)


def check_window_parts(where, entry, record):
    by_kind = collections.defaultdict(list)
    extensions = {".hatchet": "tree", ".chrome_trace": "trace", ".pftrace": "perfetto"}
    for path in entry["parts"]:
        if not os.path.isfile(path):
            raise Misbehaved(f"{where}: window {entry['window']}'s part {path!r} is missing")
        by_kind[next(kind for ext, kind in extensions.items() if path.endswith(ext))].append(path)
    if sorted(by_kind) != sorted(record.kinds):
        raise Misbehaved(f"{where}: window {entry['window']} wrote {entry['parts']}, started with {record.kinds}")
    for kind in ("tree", "trace"):
        if kind not in by_kind:
            continue
        found = sum((kernels_in(load_strict(p), kind == "trace") for p in by_kind[kind]), collections.Counter())
        if record.context == "python":
            check_python_paths(f"{where}: window {entry['window']}", found)
        total = sum(found.values())
        if not record.launches <= total <= record.launches + record.maybe:
            raise Misbehaved(f"{where}: window {entry['window']} ({kind}) holds {total} launches, "
                             f"{record.launches} were made while it recorded (and {record.maybe} in a race)")


def check_window_metadata(where, meta, windows):
    """The last metadata lists the windows up to its own, and each part's steps are its window's."""
    listed = meta["windows"]
    if [w["window"] for w in listed] != list(range(1, len(listed) + 1)) or len(listed) > len(windows):
        raise Misbehaved(f"{where}: the metadata's windows {listed}, the run's {windows}")
    steps_of = {part: w["steps"] for w in listed for part in w["parts"]}
    if len(meta["part_steps"]) != len(meta["parts"]) or any(
            steps_of.get(p) != s for p, s in zip(meta["parts"], meta["part_steps"])):
        raise Misbehaved(f"{where}: the metadata's part_steps {meta['part_steps']} for parts {meta['parts']}, "
                         f"its windows {listed}")
