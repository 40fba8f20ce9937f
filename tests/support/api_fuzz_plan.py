"""Random sequences of public session API calls for the stateful API fuzz (api_fuzz_run.py runs
them): one seed gives one sequence, the same on every run and machine (random.Random(seed) only).

A sequence is a list of ops, each a tuple whose first item names it; `with` and `thread` ops hold
bodies (lists of ops) of their own. Sessions are named by targets: ("s", k) is the k-th session
this sequence started (open, finalized, or never started when k runs past them), ("all",) no id
(every session), ("old",) an id an earlier sequence of the process finalized, ("bad", value) an
id no start() returned (a number never issued, a str, a float, a bool, -1: the disabled id),
("alias", k, type) the k-th session's id as a float, a bool, a numpy int or a str.
"""
import random

# Names of scopes, states and metrics: plain, empty, control characters, quotes and backslashes,
# unicode, a lone surrogate (which UTF-8 cannot encode), the suffixes alone, a long one.
TEXTS = ("a", "b", "step", "", " ", "\x00", "\x01\x1f\x7f", "\n\t\r", '"', "\\", "\\u0000", "ü", "日本語",
         "🙂", "\u2028", "\ud800", "(pty)", " (exc)", "x" * 300, "a/b", "%s%n", "<script>")
# Session names: the output path's last component (a folder of the sequence's own holds them).
SESSION_NAMES = ("p", "q", "r", "ü", "日本", "a b", "x.hatchet", "y.chrome_trace", "sub/dir/z", "\x01", "a\nb",
                 "", "\x00", "\udcff", "file/p", "d/", ".hatchet", "e/.", None)
VALUES = (0, 1, -1, 7, 2 ** 31, 2 ** 63, -2 ** 63, 2 ** 64 + 1, 10 ** 30, 10 ** 400, 1.5, -0.0, 1e308, 5e-324,
          float("nan"), float("inf"), float("-inf"), "text", "", "\x00\n", "ü\ud800", True, None, [1])
METRIC_NAMES = ("bytes", "flops", "", "ü", "\x00", "count", "time (ns)", "cpu_time (ns)", "device_id",
                "model (pty)", "phase (exc)", "x(pty)", " (pty)", "count (pty)", "\ud800 (exc)", "a (exc) (pty)")
SCHEDULES = ((0, 0, 1, 0, 0), (1, 0, 1, 0, 0), (1, 1, 2, 2, 1), (0, 0, 2, 1, 0), (2, 0, 1, 3, 0), (0, 0, 1, 1, 3),
             (0, 0, 0, 0, 0), (-1, 0, 1, 0, 0))
BAD_IDS = (10 ** 6, -5, "0", 1.0, True, None, -1)
GOOD_DATA = ("tree", "tree", "trace", "tree,trace", "trace,tree", "tree,trace,perfetto", "perfetto")
BAD_DATA = ("tree,tree", "table", 3, "")
RACING_CALLS = ("start", "activate", "deactivate", "finalize", "step", "flush_part")
# What the launch_metadata of the fuzz's kernel returns (hook="triton"): "raise" raises.
META_RETURNS = ({}, {"name": "renamed"}, {"name": "\ud800"}, {"count": 5, "bytes": 1}, {"flops16": float("nan")},
                {"name": ""}, {"name": "x\ny", "time (ns)": 1}, {"name": 5}, {"\udcff": 1, "bytes": 2}, "raise",
                {"name": "meta_kernel", "device_type": 3})
# arm() texts it must refuse: a range that descends, ranges that overlap, a window on a steps
# trigger, a window that is none, a trigger that is none, no trigger at all (the variable unset).
BAD_TRIGGERS = (("steps:2-1", None), ("steps:0-2,1-3", None), ("steps:0-1", "steps=2"), ("signal:USR2", "minutes=3"),
                ("bogus", None), (None, None), ("signal:KILL", None), ("steps:", None))
STYLES = ("positional", "positional", "session_id", "session", "both")
FORMATS = ("", "", None, "hatchet", "chrome_trace", "bogus", 3)


class Planner:
    """Draws one sequence; `started` estimates how many starts came before (targets name them)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.started = 0

    def pick(self, choices, common=None, bias=0.0):
        """One of `choices`, or `common` with probability `bias`."""
        if common is not None and self.rng.random() < bias:
            return common
        return self.rng.choice(choices)

    def text(self):
        return self.pick(TEXTS, common=self.rng.choice(("a", "b", "step", "inner")), bias=0.6)

    def metrics(self):
        roll = self.rng.random()
        if roll < 0.3:
            return None
        if roll < 0.33:
            return self.rng.choice(([("bytes", 1)], "bytes", {1: 2}))  # not a dict, a key not a str
        metrics = {}
        for _ in range(self.rng.randint(1, 3)):
            name = self.pick(METRIC_NAMES, common=self.rng.choice(("bytes", "m (pty)", "e (exc)")), bias=0.5)
            plain = not name.endswith(("(pty)", "(exc)"))
            value = self.pick(VALUES, common=self.rng.choice((1, 2.5, "v") if not plain else (1, 2.5)), bias=0.7)
            metrics[name] = value
        return metrics

    def target(self):
        roll = self.rng.random()
        if roll < 0.6 and self.started:
            return ("s", self.rng.randrange(self.started + 1))
        if roll < 0.65 and self.started:  # a started session's id as a float, a bool or a numpy int
            return ("alias", self.rng.randrange(self.started), self.rng.choice(("float", "bool", "numpy", "str")))
        if roll < 0.8:
            return ("all",)
        if roll < 0.88:
            return ("old",)
        return ("bad", self.rng.choice(BAD_IDS))

    def start(self):
        self.started += 1
        good = self.rng.random() < 0.7  # mostly a start that must work, then its options' errors
        data = self.rng.choice(GOOD_DATA) if good else self.pick(GOOD_DATA + BAD_DATA, common="tree", bias=0.3)
        options = {"context": self.pick(("shadow", "python", "frames"), common="shadow", bias=0.9 if good else 0.3),
                   "data": data,
                   "backend": self.pick(("interpreter", "tianshu", None, "nope"), common="interpreter", bias=0.4)}
        if self.rng.random() < 0.1 and not good:
            options["mode"] = self.rng.choice(("pcsampling", "time_source=host", "bogus=1"))
        if self.rng.random() < 0.15:
            options["hook"] = "triton" if good else self.rng.choice(("triton", "torch", 1))
        if self.rng.random() < 0.35:
            options["schedule"] = self.rng.choice(SCHEDULES[:-2] if good else SCHEDULES + ("not a schedule",))
        return ("start", self.pick(SESSION_NAMES, common=self.rng.choice("pqrst"), bias=0.9 if good else 0.3), options)

    def annotation(self, depth, thread):
        kind = self.rng.choice(("scope", "scope", "cpu_timed_scope", "state"))
        name = self.text() if self.rng.random() < 0.95 else self.rng.choice((3, None, b"x"))
        metrics = self.metrics() if kind != "state" else None
        form = self.rng.choice(("with", "with", "decorator", "manual"))
        raises = self.rng.random() < 0.15
        return ("with", kind, name, metrics, form, raises, self.body(depth + 1, thread, self.rng.randint(0, 4)))

    def op(self, depth=0, thread=False):
        """One op; on a second thread (`thread`) only what leaves the sessions' set and activity alone."""
        rng = self.rng
        if not thread and depth < 9 and rng.random() < 0.1:
            return self.trigger_op()
        roll = rng.random()
        if roll < 0.28:
            kind = rng.choice(("add", "add", "copy", "fail", "meta"))
            return ("launch", kind) if kind != "meta" else ("launch", kind, rng.randrange(len(META_RETURNS)))
        if roll < 0.43 and depth < 3:
            return self.annotation(depth, thread)
        if roll < 0.51:
            kind = rng.choice(("scope", "cpu_timed_scope", "state"))
            return ("enter", kind, self.text(), self.metrics() if kind != "state" else None)
        if roll < 0.58:
            kind = rng.choice(("scope", "scope", "state", "object"))
            name = self.text() if rng.random() < 0.5 else None
            return ("exit", kind, name, self.metrics() if kind == "scope" and rng.random() < 0.3 else None)
        if roll < 0.62:
            return ("flush_part", self.target(), rng.random() < 0.5, rng.choice((1, 1, 1, 6)))  # 6: past the backlog
        if roll < 0.65:
            return ("depth", self.target())
        if roll < 0.66:
            return ("pause",)  # lets a timer cut a part (FLAGTREE_PROFILER_PERIODIC_S); else nothing
        if thread:
            return ("launch", "add")
        if roll < 0.72:
            return self.start()
        if roll < 0.79:
            return (rng.choice(("activate", "deactivate")), self.target(), rng.choice(STYLES))
        if roll < 0.84:
            return ("finalize", self.target(), rng.choice(STYLES), self.pick(FORMATS, common="", bias=0.6))
        if roll < 0.90:
            return ("step", self.target())
        if roll < 0.915:  # a session call made on another thread, the caller waiting for it
            return ("elsewhere", self.rng.choice((self.start, lambda: self.op(depth=9, thread=False)))())
        if roll < 0.935 and depth < 2:  # a session call racing another thread's launches and parts
            return ("race", self.body(depth + 1, True, rng.randint(2, 6)), self.session_call(rng.choice(RACING_CALLS)))
        if roll < 0.95 and depth < 2:
            return ("thread", self.body(depth + 1, True, rng.randint(1, 5)),
                    self.body(depth + 1, True, rng.randint(0, 3)))
        if roll < 0.97 and depth < 2:
            self.started += 1
            return ("profile", self.rng.choice("pqrst"), self.pick(("shadow", "python"), common="shadow", bias=0.5),
                    self.pick(("tree", "trace", "tree,trace"), common="tree", bias=0.6),
                    self.body(depth + 1, False, rng.randint(0, 4)), rng.choice(("call", "decorator")),
                    rng.random() < 0.2)
        return ("bad_call", rng.randrange(len(BAD_CALLS)))

    def trigger_op(self):
        """arm() (mostly a steps trigger, or SIGUSR2 with a steps window; a bad text or option at
        times), disarm(), a signal, or a loop of launches and steps that lets windows open and close."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.3:
            good = rng.random() < 0.85
            if rng.random() < 0.6:
                trigger, window = self.step_ranges(), None
            else:
                trigger, window = "signal:USR2", f"steps={rng.randint(1, 3)}"
            if not good:
                trigger, window = rng.choice(BAD_TRIGGERS)
            options = {"context": self.pick(("shadow", "python"), common="shadow", bias=0.8),
                       "data": rng.choice(GOOD_DATA) if good or rng.random() < 0.5 else rng.choice(BAD_DATA),
                       "backend": rng.choice(("interpreter", None) if good else ("interpreter", "nope"))}
            if rng.random() < 0.15:
                options["hook"] = "triton"
            label = f"w{rng.randrange(3)}" if good or rng.random() < 0.5 else rng.choice(("", "\x00", "file/w"))
            return ("arm", trigger, window, label, options)
        if roll < 0.5:
            return ("disarm",)
        if roll < 0.65:
            return ("signal",)
        if roll < 0.75:  # disarm() or steps from a thread of their own, this one waiting
            return ("elsewhere", rng.choice((("disarm",), ("step_loop", rng.randint(1, 3)))))
        if roll < 0.85:  # signals between steps: windows open, and signals come while one is open
            return ("signal_loop", rng.randint(2, 5))
        return ("step_loop", rng.randint(1, 5))

    def step_ranges(self):
        ranges, at = [], self.rng.choice((0, 0, 1, 2))
        for _ in range(self.rng.randint(1, 3)):
            end = at + self.rng.randint(0, 2)
            ranges.append(f"{at}-{end}")
            at = end + 1 + self.rng.randint(0, 2)
        return "steps:" + ",".join(ranges)

    def session_call(self, kind):
        if kind == "start":
            return self.start()
        if kind in ("activate", "deactivate"):
            return (kind, self.target(), self.rng.choice(STYLES))
        if kind == "finalize":
            return (kind, self.target(), self.rng.choice(STYLES), self.pick(FORMATS, common="", bias=0.6))
        if kind == "step":
            return (kind, self.target())
        return (kind, self.target(), self.rng.random() < 0.5, 1)

    def body(self, depth, thread, count):
        return [self.op(depth, thread) for _ in range(count)]


# Calls that must raise a clear error whatever the state (run by the runner, named here).
BAD_CALLS = ("scope(3)", "state(None)", "exit_scope(5)", "schedule(active=0)", "schedule(wait=1.5)",
             "start(context=None)", "start(hook='torch')", "start(schedule=object())", "enter_scope('x', {'m': None})",
             "finalize(output_format='bogus', session_id=2 ** 40)", "activate(session_id=0, session=0)",
             "depth(session='x')", "profile(3)", "state('')")


def plan(seed, length=None):
    """The sequence of ops for `seed` (`length` top-level ops; default 8 to 30)."""
    planner = Planner(seed)
    count = length if length is not None else planner.rng.randint(8, 30)
    opening = [planner.start() for _ in range(planner.rng.choice((0, 1, 1, 2)))]  # sessions the ops meet
    return opening + [planner.op() for _ in range(count)]


def describe(ops, indent=0):
    """One op a line, bodies indented: what a failure prints to reproduce a sequence by eye."""
    lines = []
    for op in ops:
        bodies = [item for item in op if isinstance(item, list)]
        head = tuple(item if not isinstance(item, list) else f"<body {len(item)}>" for item in op)
        lines.append("  " * indent + ascii(head))
        for body in bodies:
            lines.extend(describe(body, indent + 1))
    return lines
