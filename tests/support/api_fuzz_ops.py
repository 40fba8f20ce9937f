"""The stateful API fuzz's ops that leave the set of sessions alone (api_fuzz_run.py's Sequence adds
the session calls): scopes, cpu-timed scopes and states (with-blocks, decorators, manual entries
and exits, out of order), launches, a second thread, and calls that must raise whatever the state.
Each thread's scope depth is modelled (a Ctx) and checked against the native stack."""
import os
import threading
import time

import flagtree.profiler as profiler
from flagtree.profiler import context as proton_context
from flagtree.profiler.native_core import native
from support.api_fuzz_meta import launch_meta
from support.api_fuzz_plan import BAD_CALLS as BAD_CALL_NAMES, META_RETURNS
from support.api_fuzz_model import Misbehaved, check_error, metrics_refused, name_refused_as_text, split_metrics
from support.kernels import launch_add, launch_copy, tensors

ANNOTATIONS = {"scope": profiler.scope, "cpu_timed_scope": profiler.cpu_timed_scope, "state": profiler.state}
THREAD_JOIN_S = 60
BAD_CALLS = {
    "scope(3)": lambda: profiler.scope(3),
    "state(None)": lambda: profiler.state(None),
    "exit_scope(5)": lambda: profiler.exit_scope(5),
    "schedule(active=0)": lambda: profiler.schedule(active=0),
    "schedule(wait=1.5)": lambda: profiler.schedule(wait=1.5),
    "start(context=None)": lambda: profiler.start("never", context=None),
    "start(hook='torch')": lambda: profiler.start("never", hook="torch"),
    "start(schedule=object())": lambda: profiler.start("never", schedule=object()),
    "enter_scope('x', {'m': None})": lambda: profiler.enter_scope("x", {"m": None}),
    "finalize(output_format='bogus', session_id=2 ** 40)": lambda: profiler.finalize(2 ** 40, output_format="bogus"),
    "activate(session_id=0, session=0)": lambda: profiler.activate(session_id=0, session=0),
    "depth(session='x')": lambda: proton_context.depth(session="x"),
    "profile(3)": lambda: profiler.profile(3),
    "state('')": lambda: profiler.state(""),
}


class FuzzRaised(Exception):
    """Raised by a sequence inside a scope: it must come out of the scope unchanged."""


class Ctx:
    """One thread's model: its own scopes and states (names, innermost last), the scopes and
    state it inherited when it started (api.md, Threads and autograd), its manual entries."""

    def __init__(self, name, inherited=(), inherited_state=None):
        self.name, self.inherited, self.inherited_state = name, list(inherited), inherited_state
        self.scopes = []
        self.states = []
        self.objects = []  # (annotation, is_scope) entered by hand and not yet left

    @property
    def depth(self):
        return len(self.scopes)

    def entered(self, is_scope, name):
        (self.scopes if is_scope else self.states).append(name)

    def left(self, is_scope):
        stack = self.scopes if is_scope else self.states
        if stack:  # the innermost is left, whichever was named
            stack.pop()

    def state(self):
        return self.states[-1] if self.states else self.inherited_state

    def node(self):
        """Where this thread's scope metrics go in a shadow tree, as (kind, name) steps: its scopes'
        node, or the innermost state's below it (as a kernel launched now would be)."""
        state = self.state()
        return tuple(("scope", n) for n in self.inherited + self.scopes) + ((("state", state),) if state else ())

    def path(self, kernel):
        """Where a launch from this thread goes in a shadow tree, by name (a trace's call stack)."""
        return tuple(name for _, name in self.node()) + (kernel,)

    def started_thread(self, sessions_open, name):
        """The Ctx of a thread this one starts through threading.Thread (inherits while a session is open)."""
        if not sessions_open:
            return Ctx(name)
        return Ctx(name, self.inherited + self.scopes, self.state())


class Ops:
    def __init__(self):
        self.main = Ctx("the main thread")
        self.lock = threading.Lock()  # Triton's interpreter is not thread-safe: launches take turns
        self.tensors = tensors(16)
        self.concurrent = False  # while a thread op's two threads run
        self.racing = False  # while a race op's session call runs beside the other thread's launches
        self.race_launches = []  # the paths launched during the race
        self.closed_in_race = []  # sessions the race's call finalized: checked once its launches are counted

    def call(self, what, function, expected):
        """Runs one API call; `expected` as check_error's. Returns its result (None when it raised).
        Disabled (FLAGTREE_PROFILER_DISABLE), a call the model would refuse may be a no-op instead:
        a cheap no-op need not check every argument, but what it raises must be clear."""
        if self.disabled and expected:
            expected = None
        try:
            result = function()
        except (Misbehaved, FuzzRaised):
            raise
        except Exception as error:
            check_error(what, error, expected)
            return None
        check_error(what, None, expected)
        return result

    def run_body(self, body, ctx):
        for op in body:
            getattr(self, "op_" + op[0])(*op[1:], **({"ctx": ctx} if op[0] in WITH_CTX else {}))
            if ctx is self.main:
                self.check_depth(ctx)
                self.check_sessions()

    def check_depth(self, ctx):
        depth = native.testing.scope_depth()
        if depth != (ctx.depth if not self.disabled else 0):  # disabled, a scope enters nothing
            raise Misbehaved(f"{depth} scopes open on {ctx.name}, the model's {ctx.depth}")

    def op_launch(self, kind, index=None, ctx=None):
        x, y, out = self.tensors
        with self.lock:
            if kind == "fail":  # a launch that raises ran no kernel: counted nowhere
                try:
                    launch_add(x, y, out, block=3)
                except Exception:
                    return
                raise Misbehaved("a launch with a block of 3 did not raise")
            name = f"{kind}_kernel"
            if kind == "meta":
                name = launch_meta(x, META_RETURNS[index], self.hooked())
            else:
                launch_add(x, y, out, block=16) if kind == "add" else launch_copy(x, out, block=16)
            path = ctx.path(name)
            if self.racing:  # which sessions take it is the race's: op_race counts it after
                self.race_launches.append(path)
                return
            for r in self.open_records():
                r.launches += r.active
                r.paths[path] += r.active

    def given(self, ctx, metrics):
        """Scope metrics given on `ctx`'s thread now: to the active shadow sessions' current node."""
        if not metrics:
            return
        sums, properties = split_metrics(metrics)
        for r in self.open_records():
            if r.active and r.context == "shadow":
                r.add_metrics(ctx.node(), sums, properties)
                r.exact = r.exact and not self.concurrent

    def op_with(self, kind, name, metrics, form, raises, body, ctx):
        refused = name_refused_as_text(name) or (metrics_refused(metrics) if kind != "state" else name == "")
        args = (name,) if kind == "state" else (name, metrics)
        made = self.call(f"{kind}({name!r}, {metrics!r})", lambda: ANNOTATIONS[kind](*args), expected=refused)
        if made is None:
            return
        is_scope = kind != "state"
        if form == "manual":
            made.__enter__()
            ctx.entered(is_scope, name)
            self.given(ctx, metrics)
            ctx.objects.append((made, is_scope))
            self.run_body(body, ctx)
            return
        entered = []

        def inside():
            ctx.entered(is_scope, name)
            self.given(ctx, metrics)
            entered.append(True)
            self.run_body(body, ctx)
            if raises:
                raise FuzzRaised(kind)

        try:
            if form == "with":
                with made:
                    inside()
            else:
                made(inside)()
        except FuzzRaised:
            if not raises:
                raise
        except Misbehaved:
            raise
        except Exception as error:
            raise Misbehaved(f"{kind} {name!r} ({form}) raised {type(error).__name__}: {error}") from error
        else:
            if raises:
                raise Misbehaved(f"{kind} {name!r} ({form}) swallowed the exception raised inside it")
        finally:
            if entered:
                ctx.left(is_scope)

    def op_enter(self, kind, name, metrics, ctx):
        refused = name_refused_as_text(name) or (metrics_refused(metrics) if kind != "state" else name == "")
        if kind == "scope":
            function = lambda: profiler.enter_scope(name, metrics)  # noqa: E731
        elif kind == "cpu_timed_scope":
            function = lambda: profiler.cpu_timed_scope(name, metrics).__enter__()  # noqa: E731
        else:
            function = lambda: profiler.enter_state(name)  # noqa: E731
        self.call(f"enter {kind} {name!r} {metrics!r}", function, expected=refused)
        if not refused:
            ctx.entered(kind != "state", name)
            self.given(ctx, metrics)

    def op_exit(self, kind, name, metrics, ctx):
        if kind == "object":
            if ctx.objects:
                made, is_scope = ctx.objects.pop(0)  # the outermost first: out of order
                self.call(f"__exit__ of {made.name!r}", lambda: made.__exit__(None, None, None), expected=False)
                ctx.left(is_scope)
            return
        if kind == "state":
            self.call(f"exit_state({name!r})", lambda: profiler.exit_state(name), expected=False)
            ctx.left(False)
            return
        refused = (name is not None and name_refused_as_text(name)) or metrics_refused(metrics)
        self.call(f"exit_scope({name!r}, {metrics!r})", lambda: profiler.exit_scope(name, metrics), expected=refused)
        if not refused:
            if ctx.scopes:  # given to the scope left, as at its entry
                self.given(ctx, metrics)
            ctx.left(True)

    def op_thread(self, body, main_body):
        # A thread started while a session is open inherits the starter's scopes (api.md, Threads).
        ctx = self.main.started_thread(self.open_records(), "a second thread")
        errors = []

        begun = threading.Event()

        def work():
            try:
                self.run_body(body[:1], ctx)
                begun.set()
                self.run_body(body[1:], ctx)
                self.check_depth(ctx)
            except BaseException as error:  # raised again on the main thread
                errors.append(error)
            finally:
                begun.set()

        thread = threading.Thread(target=work)
        self.concurrent = True  # parts cut and metrics given now land in an order the model cannot know
        try:
            thread.start()
            if self.racing:  # the call comes once the other thread is under way, while it goes on
                begun.wait(THREAD_JOIN_S)
            self.run_body(main_body, self.main)
            thread.join(THREAD_JOIN_S)
        finally:
            self.concurrent = False
        if thread.is_alive():
            raise Misbehaved(f"the second thread did not finish in {THREAD_JOIN_S} s")
        if errors:
            raise errors[0]

    def op_race(self, body, main_op):
        """A session call on this thread while another thread launches, enters scopes and cuts parts:
        a launch made meanwhile may land on either side of the call, but on one, and nothing breaks."""
        before = {id(r): (r.open and r.active, len(r.parts)) for r in self.records}
        self.racing, self.race_launches, self.closed_in_race = True, [], []
        try:
            self.op_thread(body, [main_op])
        finally:
            self.racing = False
        for r in self.records:
            was, parts = before.get(id(r), (False, len(r.parts)))
            now = r.open and r.active
            certain, possible = was and now, was or now
            if main_op[0] == "step" and len(r.parts) > parts:  # a window closes paused (api.md, schedule)
                certain = False
            if possible or r in self.closed_in_race:
                r.exact = False  # parts cut and metrics given meanwhile: the race's order
            for path in self.race_launches:
                if certain:
                    r.launches += 1
                    r.paths[path] += 1
                elif possible:
                    r.maybe += 1
        for r in self.closed_in_race:
            self.check_closed(r)

    def op_elsewhere(self, op):
        """Runs one op on a thread of its own while this one waits: sessions are the process's."""
        errors = []

        def work():
            try:
                self.run_body([op], self.main.started_thread(self.open_records(), "a thread of one call"))
            except BaseException as error:  # raised again on the main thread
                errors.append(error)

        thread = threading.Thread(target=work)
        thread.start()
        thread.join(THREAD_JOIN_S)
        if thread.is_alive():
            raise Misbehaved(f"{op[0]} on another thread did not finish in {THREAD_JOIN_S} s")
        if errors:
            raise errors[0]

    @staticmethod
    def op_pause():
        if os.environ.get("FLAGTREE_PROFILER_PERIODIC_S"):
            time.sleep(0.12)

    def op_bad_call(self, index):
        what = BAD_CALL_NAMES[index]
        either = what == "depth(session='x')" and not self.open_records()  # None when no session is open
        self.call(what, BAD_CALLS[what], expected=None if either else True)

    def unwind(self, ctx):
        """Leaves what `ctx` left entered: manual objects innermost first, then scopes and states."""
        while ctx.objects:
            made, is_scope = ctx.objects.pop()
            made.__exit__(None, None, None)
            ctx.left(is_scope)
        while ctx.scopes:
            profiler.exit_scope()
            ctx.left(True)
        while ctx.states:
            profiler.exit_state()
            ctx.left(False)


WITH_CTX = ("launch", "with", "enter", "exit", "flush_part", "depth", "step_loop", "signal_loop")
