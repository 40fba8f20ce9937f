"""A backend built only from the backend contract: docs/ARCHITECTURE.md's "Add a backend" walks
through this file, and tests/backends/test_toy_backend.py holds both to it.

The toy times Python functions as if they were kernels: ``ToyBackend.kernel(fn)`` wraps `fn`,
and every call of the wrapper while a session is open is one kernel record (host-timed) under
the calling thread's scopes. It declares Triton launch hooks too (``LAUNCH_HOOKS``): while a
session is open, each Triton launch is one more record, named after the kernel.
"""
import functools
import threading
from dataclasses import dataclass

from flagtree.profiler.backends import register_backend
from flagtree.profiler.backends.base import Backend, LaunchHooks, SharedUse
from flagtree.profiler.backends.mode import ModeGrammar, Option
from flagtree.profiler.native_core import native

# 1. The mode: every option declared once; the grammar parses, checks and writes it back.
MODE_GRAMMAR = ModeGrammar((Option("label", "text", default="", form="label=<kernel name prefix>"),
                            Option("warmup", "int", default=0, low=0, high=100),
                            Option("record", "switch", default=True)))


@dataclass(frozen=True)
class ToyOptions:
    """What the session keeps of its mode (``session.options``)."""
    label: str = ""
    warmup: int = 0
    record: bool = True

    def canonical(self):
        return MODE_GRAMMAR.canonical({"label": self.label, "warmup": self.warmup, "record": self.record})


@dataclass
class ToyState:
    """Per session (``session.state``): the kernels it recorded."""
    kernels: int = 0


# Triton's launch hooks, declared: the base attaches the named methods when the first session
# opens and takes them out after the last closes. The exit hook goes first in Triton's chain, so
# it sees the launch before hook="triton" drops its metadata; without Triton the toy runs on.
LAUNCH_HOOKS = LaunchHooks(enter="launch_enter", exit="launch_exit", exit_order="first", required=False)


# 2. The backend: the contract's attributes and hooks, nothing wired by hand.
class ToyBackend(Backend):
    name = "toy"
    mode_grammar = MODE_GRAMMAR
    SessionState = ToyState
    launch_hooks = LAUNCH_HOOKS

    def __init__(self):
        self._use = SharedUse()  # the first acquire() installs, the last release() removes
        self._sessions = []
        self._options = ToyOptions()
        self.installed = False
        self._starts = threading.local()

    def options_from(self, parsed):
        return ToyOptions(**parsed.values)

    def acquire(self, options):
        self._options = options
        self._use.acquire(self._install)

    def release(self):
        self._use.release(self._uninstall)

    def _install(self):
        self.installed = True

    def _uninstall(self):
        self.installed = False

    def attach_session(self, session):
        self._sessions.append(session)

    def detach_session(self, session):
        self._sessions.remove(session)

    def session_outputs(self, session):
        return {"toy_kernels": session.state.kernels}

    def device_info(self):
        return {"CPU": {"0": {"arch": "toy", "num_sms": 0, "clock_rate": 0, "memory_clock_rate": 0,
                              "bus_width": 0}}}

    def describe(self):
        return {"backend": self.name, "note": "host-timed Python functions"}

    # -- what the toy records ---------------------------------------------------------------
    def kernel(self, fn):
        """`fn` wrapped: each call, while a session is open, is one kernel record (named with
        the mode's label before fn's name, after `warmup` untimed calls)."""
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if not self.installed or not self._options.record:
                return fn(*args, **kwargs)
            for _ in range(self._options.warmup):  # untimed calls first
                fn(*args, **kwargs)
            start = native.core.monotonic_ns()
            result = fn(*args, **kwargs)
            self._record(self._options.label + fn.__name__, start, native.core.monotonic_ns())
            return result

        return timed

    def launch_enter(self, metadata):
        """Triton's launch enter hook (declared in LAUNCH_HOOKS): the launch's start."""
        self._starts.__dict__.setdefault("stack", []).append(native.core.monotonic_ns())

    def launch_exit(self, metadata):
        """Triton's launch exit hook: the launch as one record, named after its kernel."""
        stack = self._starts.__dict__.get("stack")
        if not stack:
            return  # entered before the hooks went in
        start = stack.pop()
        data = getattr(metadata, "data", None) or (metadata if isinstance(metadata, dict) else {})
        if self._options.record:
            self._record(self._options.label + str(data.get("name") or "<kernel>"), start,
                         native.core.monotonic_ns())

    def _record(self, name, start, end):
        native.session.record_host_kernel(name, start, end, (1, 1, 1), (1, 1, 1), native.DeviceType.CPU, 0, 0)
        for session in self._sessions:
            session.state.kernels += 1


# 3. The registration: start(backend="toy") finds it from here on.
def register():
    register_backend("toy", ToyBackend)
