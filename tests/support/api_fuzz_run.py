"""Runs the stateful API fuzz's sequences (api_fuzz_plan.py) in this process against the model
(api_fuzz_model.py), checking after every op that the open sessions and their activity are the
model's, and after every sequence that what was written is right and a fresh session works.

    python -m support.api_fuzz_run FIRST_SEED COUNT   (from tests/, TRITON_INTERPRET=1)

prints "begin <seed>" before and "ok <seed>" after each sequence; on a broken invariant, the seed,
the sequence and the traceback, and exits 1. Sequences share the process, as a program's calls do:
what one leaves behind is met by the next (each gets a folder of its own)."""
import collections
import faulthandler
import os
import sys
import tempfile
import threading
import traceback
import warnings

import numpy

import flagtree.profiler as profiler
from flagtree.profiler import context as proton_context
from flagtree.profiler import session as sessions
from flagtree.profiler.native_core import native
from support import api_fuzz_plan as plans
from support.api_fuzz_arm import ArmOps
from support.api_fuzz_model import (Misbehaved, NEVER_ISSUED, Record, base_of, data_kinds, format_refused,
                                    name_refused)
from support.api_fuzz_written import check_folder, check_written, kernels_in
from support.json_check import load_strict
from support.api_fuzz_ops import FuzzRaised, Ops
from support.kernels import launch_add, tensors

SEQUENCE_TIMEOUT_S = 60  # a sequence takes well under a second: longer is a hang


class Sequence(ArmOps, Ops):
    """One sequence's model and its run; Ops holds the scope, launch and thread ops, ArmOps the
    trigger's (arm, disarm, its windows)."""

    def __init__(self, folder, issued):
        super().__init__()
        self.arm = None  # the armed run's model (api_fuzz_arm.ArmModel)
        # FLAGTREE_PROFILER_DISABLE=1: every call a no-op that raises only for what it must refuse
        self.disabled = os.environ.get("FLAGTREE_PROFILER_DISABLE") == "1"
        self.folder = folder
        self.records = []
        self.issued = issued  # ids below it were returned by some start() of the process
        self.old_id = issued - 1 if issued else NEVER_ISSUED

    def open_records(self):
        return [r for r in self.records if r.open]

    def hooked(self):
        """Whether the interpreter runs kernels' launch_metadata now (an interpreter hook session is open)."""
        return any(r.hook for r in self.open_records())

    def resolve(self, target):
        """(the id to pass, its Record or None); an id of ("all",) is None."""
        if target[0] == "all":
            return None, None
        if target[0] == "s":
            k = target[1]
            return (self.records[k].id, self.records[k]) if k < len(self.records) else (NEVER_ISSUED + k, None)
        if target[0] == "old":
            return self.old_id, None
        if target[0] == "alias":  # the k-th session's id as another type: no session's id
            k, kind = target[1], target[2]
            real = self.records[k].id if k < len(self.records) else NEVER_ISSUED + k
            return {"float": float, "bool": bool, "numpy": numpy.int64, "str": str}[kind](real), None
        return target[1], None

    def targets(self, session_id, record):
        """The records a call on `session_id` acts on, or None when it must raise."""
        if session_id is None:
            return self.open_records()
        if session_id == -1 and type(session_id) is int:
            return []
        return [record] if record is not None and record.open else None

    # -- starting ------------------------------------------------------------------------------
    def start_refused(self, label, options, kinds):
        if name_refused(label, self.folder) or options.get("context") not in ("shadow", "python") or kinds is None:
            return True
        backend = options.get("backend")
        if backend not in ("interpreter", "tianshu", None):
            return True
        mode = options.get("mode")
        if mode is not None and not (backend == "tianshu" and mode == "time_source=host"):
            return True
        if options.get("hook") not in (None, "triton"):
            return True
        base = base_of(self.folder, label)
        if any(r.base == base and set(r.kinds) & set(kinds) for r in self.open_records()):
            return True
        used = sum(len(r.kinds) for r in self.open_records())
        return used + len(kinds) > native.MAX_SESSIONS

    def op_start(self, label, options):
        options = dict(options)
        plan = options.get("schedule")
        if isinstance(plan, tuple):
            made = self.call("schedule" + repr(plan), lambda: profiler.schedule(
                **dict(zip(("wait", "warmup", "active", "repeat", "skip_first"), plan))),
                expected=plan[2] < 1 or min(plan) < 0)
            if made is None:
                return
            options["schedule"] = plan = made
        kinds = data_kinds(options["data"])
        refused = self.start_refused(label, options, kinds) or isinstance(plan, str)
        name = label if not label else os.path.join(self.folder, label)  # "" is given as it is
        sid = self.call(f"start({label!r}, {options})", lambda: profiler.start(name, **options), expected=refused)
        if self.disabled:
            if sid not in (None, -1):
                raise Misbehaved(f"start() with profiling disabled returned {sid!r}, not -1")
            return
        if sid is not None:
            self.add_record(sid, label, kinds, options["context"], plan)
            # The interpreter runs launch_metadata only for a hook session of its own backend.
            self.records[-1].hook = options.get("hook") == "triton" and options["backend"] in ("interpreter", None)

    def add_record(self, sid, label, kinds, context, plan):
        if sid != self.issued:
            raise Misbehaved(f"start() returned {sid}, expected the next id {self.issued}")
        self.issued += 1
        found = sessions.find_session(sid)
        self.records.append(Record(sid, base_of(self.folder, label), kinds, context, plan, found.metadata_path))

    def op_profile(self, label, context, data, body, form, raises):
        kinds = data_kinds(data)
        refused = self.start_refused(label, {"context": context, "data": data}, kinds)
        opened = []

        def work():
            if self.disabled:  # no session opens: the function runs all the same
                self.run_body(body, self.main)
                opened.append(None)
                if raises:
                    raise FuzzRaised("profile")
                return
            sid = max(sessions.open_sessions())
            self.add_record(sid, label, kinds, context, None)
            opened.append(self.records[-1])
            self.run_body(body, self.main)
            if raises:  # profile() finalizes its session and lets the exception through
                raise FuzzRaised("profile")

        options = dict(name=label if not label else os.path.join(self.folder, label), context=context, data=data)
        run = profiler.profile(work, **options) if form == "call" else profiler.profile(**options)(work)
        try:
            sid = self.call(f"profile({label!r}, {form})", run, expected=refused)
        except FuzzRaised:
            if not (raises and opened):
                raise
            sid = opened[0].id if not self.disabled else -1
        else:
            if raises and sid is not None:
                raise Misbehaved("profile() swallowed the exception its function raised")
        if self.disabled:
            if sid not in (None, -1) or (sid is None and not refused):
                raise Misbehaved(f"profile() with profiling disabled returned {sid!r}, not -1")
            return
        if sid is not None:
            if opened[0].id != sid:
                raise Misbehaved(f"profile() returned {sid}, its session was {opened[0].id}")
            self.closed([r for r in opened if r.open])

    # -- session calls -------------------------------------------------------------------------
    @staticmethod
    def by_style(function, style, session_id, target, **extra):
        """function called with the id as `style` says: positional (none at all for every
        session), session_id=, Proton's session=, or both (a TypeError)."""
        if style == "both":
            return function(session_id=session_id, session=session_id, **extra)
        if style in ("session_id", "session"):
            return function(**{style: session_id}, **extra)
        return function(**extra) if target == ("all",) else function(session_id, **extra)

    def op_activity(self, name, target, style):
        session_id, record = self.resolve(target)
        acting = self.targets(session_id, record)
        function = getattr(profiler, name)
        self.call(f"{name}({session_id!r}, style={style})", lambda: self.by_style(function, style, session_id, target),
                  expected=style == "both" or acting is None)
        if style != "both" and acting is not None:
            for r in acting:
                r.active = name == "activate"

    def op_activate(self, target, style):
        self.op_activity("activate", target, style)

    def op_deactivate(self, target, style):
        self.op_activity("deactivate", target, style)

    def op_finalize(self, target, style, output_format):
        session_id, record = self.resolve(target)
        if style == "both" or (session_id is not None and session_id != -1 and type(session_id) is not int):
            refused, acting = True, []
        elif session_id == -1:
            refused, acting = False, []
        elif session_id is None:
            acting = self.open_records()
            refused = format_refused(output_format, acting) or (not acting and output_format not in (
                "", None, "hatchet", "chrome_trace"))
        elif not 0 <= session_id < self.issued:
            refused, acting = True, []
        else:
            acting = [record] if record is not None and record.open else []
            refused = format_refused(output_format, acting) or (not acting and output_format not in (
                "", None, "hatchet", "chrome_trace"))
        self.call(f"finalize({session_id!r}, {output_format!r}, style={style})",
                  lambda: self.by_style(profiler.finalize, style, session_id, target, output_format=output_format),
                  expected=refused)
        if not refused:
            self.closed(acting)

    def closed(self, records):
        for r in records:
            r.open = False
            if self.racing:
                self.closed_in_race.append(r)
            else:
                self.check_closed(r)

    @staticmethod
    def check_closed(record):
        if not record.window:  # a window's parts are the armed run's: checked at disarm()
            check_written(record)

    def op_flush_part(self, target, wait, count, ctx):
        session_id, record = self.resolve(target)
        acting = self.targets(session_id, record)
        for _ in range(count):
            # In a race the other thread's call may close the session first: either outcome is right.
            expected = None if self.racing and ctx is not self.main else acting is None
            paths = self.call(f"flush_part({session_id!r}, wait={wait})",
                              lambda: profiler.flush_part(session_id, wait=wait), expected=expected)
            for r in acting or ():
                r.part()
                r.exact = r.exact and not self.concurrent
        if wait and paths:
            missing = [p for p in paths if not os.path.isfile(p)]
            if missing:
                raise Misbehaved(f"flush_part(wait=True) returned before writing {missing}")

    def op_step(self, target):
        session_id, record = self.resolve(target)
        acting = self.targets(session_id, record)
        self.call(f"step({session_id!r})", lambda: profiler.step(session_id), expected=acting is None)
        self.arm_step()  # the armed run counts every step(), whatever its id, and raising ones too
        for r in acting or ():
            if r.plan is not None:
                if r.plan.window_ends(r.step):  # the window's last step: its part is cut
                    r.part()
                r.advance()

    def op_depth(self, target, ctx):
        session_id, record = self.resolve(target)
        opened = self.open_records()
        refused = bool(opened) and (record is None or not record.open or type(session_id) is not int)
        if self.racing:  # the session may close meanwhile: any clear answer
            self.call(f"depth({session_id!r})", lambda: proton_context.depth(session_id), expected=None)
            return
        found = self.call(f"depth({session_id!r})", lambda: proton_context.depth(session_id), expected=refused)
        if not opened and found is not None:
            raise Misbehaved(f"context.depth({session_id!r}) with no session open gave {found!r}, not None")
        if not refused and opened and record.context == "shadow" and found != len(ctx.inherited) + ctx.depth:
            raise Misbehaved(f"context.depth({session_id}) on {ctx.name} is {found}, "
                             f"the model's {ctx.inherited} inherited + {ctx.scopes} own")

    # -- after each op, after the sequence -----------------------------------------------------
    def check_sessions(self):
        """The open sessions and their activity are the model's."""
        expected = sorted(r.id for r in self.open_records())
        if sessions.open_sessions() != expected:
            raise Misbehaved(f"open sessions {sessions.open_sessions()}, the model's {expected}")
        for r in self.open_records():
            active = native.session.session_is_active(sessions.find_session(r.id).slot)
            if active != r.active:
                raise Misbehaved(f"session {r.id} is {'' if active else 'in'}active, the model's {r}")

    def finish(self):
        """Leaves what the sequence left entered, finalizes what it left open, and checks."""
        self.unwind(self.main)
        self.op_disarm()
        acting = self.open_records()
        self.call("finalize() at the end", profiler.finalize, expected=False)
        self.closed(acting)
        self.check_sessions()
        if native.testing.scope_depth() != 0:
            raise Misbehaved(f"{native.testing.scope_depth()} scopes still open after the sequence")
        check_folder(self.folder)

    def fresh_session(self):
        """A new session after the sequence works: its launches land under its scope, counted
        (its parts summed, where a timer cut some). Disabled, it is -1 and nothing is written."""
        x, y, out = tensors(16)
        name = os.path.join(self.folder, "fresh-after")
        sid = profiler.start(name, data="tree,trace")
        if self.disabled:
            with profiler.scope("fresh"), profiler.state("st"):
                launch_add(x, y, out, block=16)
            profiler.finalize(sid)
            written = sorted(set(os.listdir(self.folder)) - {"file"})
            if sid != -1 or written:
                raise Misbehaved(f"disabled, start() returned {sid} and the sequence wrote {written}")
            return sid
        metadata = sessions.find_session(sid).metadata_path
        with profiler.scope("fresh"), profiler.state("st"):
            launch_add(x, y, out, block=16)
            launch_add(x, y, out, block=16)
        profiler.finalize(sid)
        for extension in (".hatchet", ".chrome_trace"):
            outputs = [p for p in load_strict(metadata)["outputs"] if p.endswith(extension)]
            found = sum((kernels_in(load_strict(p), extension != ".hatchet") for p in outputs), collections.Counter())
            if found != {("fresh", "st", "add_kernel"): 2}:
                raise Misbehaved(f"a fresh session after the sequence wrote {dict(found)} to {outputs}")
        check_folder(self.folder)
        return sid


def run_sequence(seed, root):
    folder = os.path.join(root, f"seq{seed}")
    os.makedirs(folder)
    with open(os.path.join(folder, "file"), "w") as f:
        f.write("a file where a session name wants a folder")
    os.chdir(folder)  # start(name=None) writes ./flagtree.*
    sequence = Sequence(folder, sessions._next_id[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mismatched exits and metric clashes warn, as documented
        try:
            sequence.run_body(plans.plan(seed), sequence.main)
        finally:
            sequence.finish()
        sequence.fresh_session()


def main(first, count):
    os.environ.setdefault("TRITON_INTERPRET", "1")
    root = tempfile.mkdtemp(prefix="api-fuzz-")
    for seed in range(first, first + count):
        print(f"begin {seed}", flush=True)
        faulthandler.dump_traceback_later(SEQUENCE_TIMEOUT_S, exit=True)
        try:
            run_sequence(seed, root)
        except BaseException:
            print(f"FAIL seed={seed}", flush=True)
            traceback.print_exc(file=sys.stdout)
            print("sequence:\n" + "\n".join(plans.describe(plans.plan(seed))), flush=True)
            return 1
        finally:
            faulthandler.cancel_dump_traceback_later()
        print(f"ok {seed}", flush=True)
    if threading.active_count() > 3:  # the main thread, the part writer, a periodic-part timer at most
        print(f"threads left running: {threading.enumerate()}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
