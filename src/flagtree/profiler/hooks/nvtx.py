"""NVTX ranges as shadow-context scopes.

While any session is open, ``torch.cuda.nvtx.range_push`` / ``range_pop`` (and therefore the
``torch.cuda.nvtx.range(...)`` context manager and decorator, which call them) also enter and
leave a profiler scope named by the range's message, so kernels launched inside an NVTX range
land under it in the tree, exactly as inside ``scope(msg)``. ``FLAGTREE_PROFILER_NVTX=0`` turns
this off. The original functions are put back when the last session is finalized.

What is and is not covered:

* Only the Python functions of ``torch.cuda.nvtx`` are wrapped, and only if torch is already
  imported when a session starts (the profiler never imports torch itself). Code that bound them
  earlier (``from torch.cuda.nvtx import range_push``) or NVTX ranges pushed from C++ (NVTX's
  C API) are not seen; ``range_start``/``range_end`` (ranges across threads) and ``mark`` are
  not scopes and are left alone.
* Each thread counts the ranges it pushed through the wrapper: a ``range_pop`` leaves a profiler
  scope only when that thread has one open from ``range_push``, so a range pushed before the
  session started is popped without touching the profiler's scopes.
* A range still open when the last session is finalized stays on the thread's scope stack until
  its ``range_pop`` runs under a later session (the count survives); without a later session it
  costs nothing.
"""
import sys
import threading
from ..native_core import native

_lock = threading.Lock()
_state = {"users": 0, "module": None, "originals": None}
_local = threading.local()


def _torch_nvtx():
    if "torch" not in sys.modules:
        return None
    try:
        import torch.cuda.nvtx as nvtx  # deferred: torch is heavy and optional
    except Exception:
        return None
    return nvtx


def _wrap(module):
    push, pop = module.range_push, module.range_pop
    names = {}

    def range_push(msg, *args, **kwargs):
        result = push(msg, *args, **kwargs)  # a failing push (no NVTX) opens no scope either
        key = msg if isinstance(msg, str) else str(msg)
        name = names.get(key)
        if name is None:
            name = names.setdefault(key, native.core.intern(key))
        native.context.scope_enter(name)
        _local.depth = getattr(_local, "depth", 0) + 1
        return result

    def range_pop(*args, **kwargs):
        if getattr(_local, "depth", 0) > 0:
            _local.depth -= 1
            native.context.scope_exit(False)
        return pop(*args, **kwargs)

    range_push.__wrapped__ = push
    range_pop.__wrapped__ = pop
    range_push.__doc__, range_pop.__doc__ = push.__doc__, pop.__doc__
    module.range_push, module.range_pop = range_push, range_pop
    _state["module"] = module
    _state["originals"] = (push, pop, range_push, range_pop)


def install(module=None):
    """One more session wants NVTX ranges as scopes; wraps `module` (default torch.cuda.nvtx)."""
    with _lock:
        _state["users"] += 1
        if _state["module"] is None:
            module = module if module is not None else _torch_nvtx()
            if module is not None:
                _wrap(module)


def uninstall():
    """One session less; the last one restores the original functions."""
    with _lock:
        if _state["users"] == 0:
            return
        _state["users"] -= 1
        if _state["users"] or _state["module"] is None:
            return
        module, (push, pop, ours_push, ours_pop) = _state["module"], _state["originals"]
        # Someone may have wrapped our wrappers since: then theirs stay (they call ours, which
        # keep working and only cost a check while no session is open).
        if module.range_push is ours_push:
            module.range_push = push
        if module.range_pop is ours_pop:
            module.range_pop = pop
        _state["module"] = None
        _state["originals"] = None


def installed_module():
    return _state["module"]
