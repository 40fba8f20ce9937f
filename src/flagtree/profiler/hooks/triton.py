"""hook="triton": a kernel's launch metadata becomes part of its profile.

A Triton kernel declared with ``@triton.jit(launch_metadata=fn)`` has ``fn(grid, metadata, args)``
evaluated before each launch while a session with ``hook="triton"`` is open; ``args`` maps the
kernel's argument names to the launch's values. What ``fn`` returns is attached to that launch:

* ``"name"`` (a string) renames the kernel's node in the tree;
* ``"flops8"``, ``"flops16"``, ``"flops32"``, ``"flops64"`` and ``"bytes"`` are metrics summed per node;
* any other key with a numeric value (int or float, not bool; finite) is kept as a user metric by its
  key, summed per node the same way.

A launch_metadata function that raises, returns something that is not a dict, or returns values
that are not numbers never stops the kernel: the problem is reported once per kernel name and kind
of problem (a ``RuntimeWarning`` naming the kernel), the numeric values that were fine are kept, and
a launch whose function raised is recorded with no metadata.

Filters, read when the first hook="triton" session starts: ``FLAGTREE_PROFILER_HOOK_INCLUDE`` and
``FLAGTREE_PROFILER_HOOK_EXCLUDE``, regular expressions searched (``re.search``) in each kernel's name:
only matching kernels (include) and never matching ones (exclude, which wins) have their launch
metadata evaluated. Kernels left out are still profiled, under their own name with no metadata.

Kernels that ``fn`` launches itself go under the state ``__launch_metadata`` (METADATA_STATE),
beside the kernel's node; the viewer hides them unless asked.

How the hook reaches Triton: on GPU backends through Triton's launch enter/exit hooks
(triton_glue/launch_hooks.py says where each Triton version keeps them and how ours sit next to others);
the enter hook's lazy metadata ``get()`` evaluates ``fn``, the result goes to the native core with
``set_launch_metadata`` and is consumed by the next recorded launch on the same thread; the exit hook
clears what was not. The interpreter backend (TRITON_INTERPRET=1) calls no launch hooks, so its
``before_launch`` evaluates ``fn`` itself, with the arguments Triton passes on a GPU.

Sessions share one installation (reference counted): the hooks go away with the last session.
The per-launch path is launch_metadata.py; this module installs it.
"""
import threading
import warnings

from . import launch_metadata
from ..triton_glue import interpreter as triton_interpreter, launch_hooks
from ..triton_glue.versions import triton_version

_lock = threading.Lock()
_installed = {}  # key -> [reference count, undo function]


def _install_gpu():
    owner = launch_hooks.launch_hook_owner()
    undo_enter = launch_hooks.attach(owner, "launch_enter_hook", launch_metadata.gpu_enter)
    try:
        # Last in the exit chain: after the recorders, which read the metadata this exit drops.
        undo_exit = launch_hooks.attach(owner, "launch_exit_hook", launch_metadata.gpu_exit, order="last")
    except BaseException:
        undo_enter()
        raise

    def undo():
        try:
            undo_exit()
        finally:
            undo_enter()
            launch_metadata.clear_pending()

    return undo


def _install_interpreter(backend):
    if not triton_interpreter.keeps_jit_options():
        # Said once per installation: the launches are still recorded, under the kernels' names.
        warnings.warn(f"flagtree.profiler: hook='triton': the interpreter of Triton {triton_version()} drops "
                      f"triton.jit's launch_metadata, so kernels are recorded without it (later Tritons' "
                      f"interpreters keep it, checked on 3.3 to 3.9; on a GPU, Triton 3.1's launch hooks give it)",
                      RuntimeWarning, stacklevel=2)
    previous = getattr(backend, "before_launch", None)

    if previous is None:
        hook = launch_metadata.interpreter_before_launch
    else:
        def hook(interpreted, args, grid, kwargs):
            previous(interpreted, args, grid, kwargs)
            launch_metadata.interpreter_before_launch(interpreted, args, grid, kwargs)

    backend.before_launch = hook

    def undo():
        if backend.before_launch is hook:
            backend.before_launch = previous
        launch_metadata.clear_pending()

    return undo


class HookHandle:
    """What install() returns; remove() undoes this installation (once)."""

    def __init__(self, key):
        self._key = key
        self._removed = False

    def remove(self):
        with _lock:
            if self._removed:
                return
            self._removed = True
            entry = _installed.get(self._key)
            if entry is None:
                return
            entry[0] -= 1
            if entry[0] == 0:
                del _installed[self._key]
                entry[1]()


def install(backend):
    """Installs the launch-metadata hook for `backend`; returns a handle with remove().

    Reference counted: sessions sharing a backend share one installation.
    """
    interpreter = getattr(backend, "name", None) == "interpreter"
    key = ("interpreter", id(backend)) if interpreter else ("triton",)
    with _lock:
        entry = _installed.get(key)
        if entry is None:
            if not _installed:
                launch_metadata.reset_state()
            undo = _install_interpreter(backend) if interpreter else _install_gpu()
            entry = _installed[key] = [0, undo]
        entry[0] += 1
        return HookHandle(key)


def installed():
    """How many sessions hold each installation (for tests and diagnostics)."""
    with _lock:
        return {key[0]: entry[0] for key, entry in _installed.items()}
