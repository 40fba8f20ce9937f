"""Every launch of a compiled Triton kernel seen at least once, whatever launched it.

A compile-time route (the device timer's stamps) sees a launch only when the kernel's launcher
asks Triton's profile allocator for scratch memory, i.e. when the kernel was compiled with the
route's stamps. Kernels compiled before a session, in another process (inductor's compile
workers, Triton's disk cache) or held by a library (FlagGems' LibEntry, Liger, inductor's
launchers) skip ``JITFunction.run``'s compile and are launched through their own launcher, so
that route never hears of them.

Two doors cover those launches, each costing nothing per launch once a kernel has been seen:

* ``CompiledKernel.run`` (a property on Triton 3.2-3.9) is what ``JITFunction.run``,
  ``CompiledKernel[grid]`` and libraries holding a compiled kernel call to get its launcher. While
  installed, a kernel's first launch chooses its launcher with ``decide(kernel, launcher)`` (the
  kernel's own launcher, timed by the route, or a wrapper); later launches find the choice in
  the door itself (native ``LaunchDoor``, a data descriptor like Triton's property), never in the
  kernel's ``__dict__``: an entry there would slow every attribute read of the kernel for good.
* torch inductor's ``CachingAutotuner.run`` (when torch's inductor runtime is loaded): its
  launchers captured the kernel's launcher (or a static CUDA launcher that bypasses Triton) when
  they were made, usually before the session; at an autotuner's first run each launcher is
  passed through ``decide`` too, and the autotuner then calls its own ``run`` again directly.
  torch imports its inductor runtime at a program's first compiled call, which may come inside a
  session: a finder on ``sys.meta_path`` opens this door as soon as that module is executed.

``decide(kernel, launcher, kind)`` (kind "kernel": the kernel's own launcher; "inductor": an
inductor launcher made from the kernel; "inductor-static": one calling inductor's static CUDA
launcher, `kernel` its StaticallyLaunchedCudaKernel) returns ``(launcher, reason)``: reason None means the
launcher returned is timed (the one given, or one it made, e.g. of a stamped copy of the kernel);
otherwise the launcher is given to ``fallback(launcher, name, reason, kind)`` when there is one
(the device timer's event-timed launches), and where that gives None its launches are counted
by kernel name with the reason (``counts()``).
Launches of CUDA graphs replay without Python: only their capture passes through here.
"""
import sys
import threading
import types
import weakref

from ..common.after_import import watch
from ..native_core import native

_INDUCTOR = "torch._inductor.runtime.triton_heuristics"
_TUNER_SLOT = "_flagtree_launchers"  # an autotuner's launchers before wrapping, while installed


def _compiled_kernel_class():
    from triton.compiler.compiler import CompiledKernel  # deferred: triton is heavy and optional

    return CompiledKernel


class LaunchSight:
    def __init__(self, decide, inductor_module=_INDUCTOR, fallback=None):
        self._decide = decide
        self._fallback = fallback
        self._inductor_module = inductor_module
        self._lock = threading.Lock()
        self._counts = {}  # kernel name -> [launches, reason]
        self._tuners = weakref.WeakSet()  # autotuners whose launchers were passed through decide
        self._undo = []
        self.installed = False
        self.doors = []  # which doors are open ("CompiledKernel.run", "CachingAutotuner.run")
        self._run_door = None  # (CompiledKernel, Triton's run property, ours) while that door is open

    # -- counting -------------------------------------------------------------------------------
    def counts(self):
        """{kernel name: (launches counted, reason)} since install (the counts stay after uninstall)."""
        with self._lock:
            return {name: (entry[0], entry[1]) for name, entry in self._counts.items()}

    def counted(self, launch, name, reason):
        """`launch` with each call counted under `name` (a lock: launches on several threads all count)."""
        with self._lock:
            entry = self._counts.setdefault(name, [0, reason])
        lock = self._lock

        def counted_launch(*args, **kwargs):
            with lock:
                entry[0] += 1
            return launch(*args, **kwargs)

        if isinstance(launch, types.FunctionType):  # an inductor launcher: inductor reads its config, n_regs...
            counted_launch.__dict__.update(launch.__dict__)
        counted_launch.flagtree_original = launch
        return counted_launch

    def _choose(self, kernel, launcher, kind):
        chosen, reason = self._decide(kernel, launcher, kind)
        if reason is None:
            return chosen
        name = str(getattr(kernel, "name", None) or "<unnamed kernel>")
        timed = self._fallback(chosen, name, reason, kind) if self._fallback is not None else None
        return timed if timed is not None else self.counted(chosen, name, reason)

    # -- the doors ------------------------------------------------------------------------------
    def install(self):
        self.installed = True
        self._open_compiled_kernel()
        self.see_inductor()

    def uninstall(self):
        self.installed = False
        while self._undo:
            self._undo.pop()()
        self.doors = []

    def _open_compiled_kernel(self):
        kind = _compiled_kernel_class()
        original = kind.__dict__.get("run")
        if not isinstance(original, property):
            return  # a Triton whose launcher is a plain attribute: only the route's own launches are seen
        ours = native.core.LaunchDoor(original, self._first_sight)
        kind.run = ours
        self.doors.append("CompiledKernel.run")
        self._run_door = (kind, original, ours)

        def undo():
            self._run_door = None
            kind.run = original
            ours.close()  # the choices go: kernels launch their own launchers again

        self._undo.append(undo)

    def pause(self, paused):
        """Paused, ``CompiledKernel.run`` is Triton's own property again: every kernel launches its
        own launcher, as with nothing installed (the launchers chosen so far are kept for the
        resume). Inductor's autotuners keep the launchers they were given."""
        if self._run_door is None:
            return
        kind, original, ours = self._run_door
        now = kind.__dict__.get("run")
        if paused and now is ours:
            kind.run = original
        elif not paused and now is original:
            kind.run = ours

    def _first_sight(self, kernel, launcher):
        return self._choose(kernel, launcher, "kernel")

    def see_inductor(self):
        """Opens the inductor door if torch's inductor runtime is loaded, else once it is."""
        module = sys.modules.get(self._inductor_module)
        if module is not None:
            self._open_inductor(module)
            return
        finder = watch(self._inductor_module, self._open_inductor)
        if finder is None:
            return

        def undo():
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)

        self._undo.append(undo)

    def _open_inductor(self, module):
        tuner_class = getattr(module, "CachingAutotuner", None)
        if tuner_class is None or "CachingAutotuner.run" in self.doors or not self.installed:
            return  # not inductor's runtime as known here, already open, or the sight is down
        self.open_autotuner(tuner_class)

    def open_autotuner(self, tuner_class):
        """Passes the launchers of every `tuner_class` instance through decide at its first run."""
        original = tuner_class.__dict__["run"]
        sight = self

        def run(tuner, *args, **kwargs):
            if not tuner.launchers and callable(getattr(tuner, "precompile", None)):
                tuner.precompile()  # what run would do first: its launchers exist before its first launch
            sight._see_tuner(tuner, original)
            return original(tuner, *args, **kwargs)

        run.__wrapped__ = original
        tuner_class.run = run
        self.doors.append("CachingAutotuner.run")

        def undo():
            tuner_class.run = original
            for tuner in list(self._tuners):
                _restore_tuner(tuner)
            self._tuners = weakref.WeakSet()

        self._undo.append(undo)

    def _see_tuner(self, tuner, original):
        launchers = list(tuner.launchers)
        tuner.__dict__[_TUNER_SLOT] = launchers
        tuner.launchers = [self._tuner_launcher(launcher) for launcher in launchers]
        if getattr(tuner, "_cached_launcher", None) is not None:
            tuner._cached_launcher = None  # its fast path held an unwrapped launcher
        tuner.run = types.MethodType(original, tuner)  # later runs go straight to inductor's own
        self._tuners.add(tuner)

    def _tuner_launcher(self, launcher):
        """One inductor launcher, timed as it is, redirected, or counted: its kernel is the
        CompiledKernel it was made from (``bin`` in its globals; kind "inductor"), or the static
        CUDA launcher's kernel whose ``run`` it calls (kind "inductor-static")."""
        scope = getattr(launcher, "__globals__", {})
        binary = scope.get("bin")
        if binary is not None and isinstance(binary, _compiled_kernel_class()):
            return self._choose(binary, launcher, "inductor")
        static = getattr(scope.get("runner"), "__self__", None)
        if static is not None and hasattr(static, "cubin_path"):
            return self._choose(static, launcher, "inductor-static")
        name = getattr(static, "name", None) or getattr(launcher, "__name__", "<inductor launcher>")
        return self.counted(launcher, str(name), "an inductor launcher of a kind not known here: not timed")


def _restore_tuner(tuner):
    launchers = tuner.__dict__.pop(_TUNER_SLOT, None)
    tuner.__dict__.pop("run", None)
    if launchers is None:
        return
    # An autotune that ran since picked one of ours: give back the launcher it wraps.
    tuner.launchers = [getattr(launcher, "flagtree_original", launcher) for launcher in tuner.launchers]
    if getattr(tuner, "_cached_launcher", None) is not None:
        tuner._cached_launcher = None


def profile_scratch_size(kernel):
    """The profile scratch bytes a compiled kernel's launcher asks Triton's profile allocator for
    (0: it never asks; Triton 3.5-3.9 keep it in the kernel's metadata)."""
    return int(getattr(getattr(kernel, "metadata", None), "profile_scratch_size", 0) or 0)
