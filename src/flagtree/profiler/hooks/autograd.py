"""Backward passes under the scopes of whoever asked for them.

Driving threads (always on while a session is open). PyTorch runs a CUDA backward pass on its own
per-device engine threads, whose scope stacks are empty. ``torch.autograd``'s backward entry
(``_engine_run_backward``, behind ``Tensor.backward``, ``torch.autograd.backward`` and
``torch.autograd.grad``; those two themselves on a torch without it) is wrapped: while a thread
waits in it, threads that were not started through ``threading`` (hooks/threads.py) and launch on
an empty stack inherit that thread's context: its scopes, innermost state and Python frames
(context/inheritance.h has the rule). A CPU backward runs on the calling thread and needs nothing.

Backward by forward layer (``FLAGTREE_PROFILER_BACKWARD_SCOPES=forward``; default ``caller``):
each backward kernel goes under the forward scope its op ran in, as
``layer3/mlp/<backward>/kernel``. Built on autograd's own facts: every scope boundary in forward
records the thread's autograd sequence number (``torch._C._autograd._get_sequence_nr``) with the
scope stack; at backward the graph is walked from its roots, each node's ``_sequence_nr()`` finds
the stack its op was created under, the node's ``metadata`` keeps it and a pre-hook / post-hook
pair pushes and pops it (as rooted scopes: they replace the stack below) on the thread that runs
the node. Limits: the forward must run on the thread that calls backward (sequence numbers are per
thread); scopes entered through nvtx ranges or native calls are not seen; nodes created before the
first scope boundary after the session opened, and nodes of a graph built more than 65,536
boundaries before its backward, stay under the caller; AccumulateGrad nodes take the scope of the
node that feeds them; a node whose backward raises leaves its scopes on its thread until that
thread's next tagged node.
"""
import bisect
import importlib
import sys
import threading

import importlib.machinery

from .. import _env
from ..native_core import native

BACKWARD_SCOPE = "<backward>"
MAX_MARKS = 1 << 16
_TAG_KEY = "flagtree_profiler_scopes"
_NO_SEQUENCE = 1 << 63  # AccumulateGrad and other nodes outside the forward's numbering

_wrapped = []  # (owner, attribute, original, wrapper)
_forward_mode = [False]
_marks = {}  # thread ident -> _Marks of that thread's forward
_sequence_nr = None  # torch._C._autograd._get_sequence_nr, bound at install
_snapshot = None  # native.context.context_snapshot, bound at install


class _Marks:
    """Scope boundaries of one thread's forward: sequence number -> the stack from then on.
    Hooks are made on first use, so a boundary costs a sequence-number read and a snapshot."""

    __slots__ = ("seqs", "snapshots", "hooks")

    def __init__(self):
        self.seqs = []
        self.snapshots = []
        self.hooks = {}  # index in seqs -> hooks (or None), cleared when the lists are trimmed

    def add(self, seq, snapshot):
        if self.seqs and self.seqs[-1] == seq:  # no node was made since the last boundary
            self.snapshots[-1] = snapshot
            self.hooks.pop(len(self.seqs) - 1, None)
            return
        if len(self.seqs) >= MAX_MARKS:
            del self.seqs[: MAX_MARKS // 2], self.snapshots[: MAX_MARKS // 2]
            self.hooks.clear()
        self.seqs.append(seq)
        self.snapshots.append(snapshot)

    def at(self, seq):
        i = bisect.bisect_right(self.seqs, seq) - 1
        if i < 0:
            return None
        if i not in self.hooks:
            snapshot = self.snapshots[i]
            self.hooks[i] = _node_hooks(snapshot) if snapshot.scopes else None
        return self.hooks[i]


def _node_hooks(snapshot):
    """The (scope names, pre-hook, post-hook) that put a node's kernels under `snapshot`."""
    tag = snapshot.extended(BACKWARD_SCOPE)

    def enter(grad_outputs):
        native.context.rooted_scopes_push(tag if _forward_mode[0] else None)

    def leave(grad_inputs, grad_outputs):
        native.context.rooted_scopes_pop()

    return tag.scopes, enter, leave


def _mark():
    """scope.py's boundary hook: what stack the nodes made from here on belong to."""
    ident = threading.get_ident()
    marks = _marks.get(ident)
    if marks is None:
        marks = _marks[ident] = _Marks()
    marks.add(_sequence_nr(), _snapshot(False))


def _root_nodes(outputs):
    import torch  # deferred: torch is heavy and optional

    if isinstance(outputs, torch.Tensor) or not isinstance(outputs, (list, tuple)):
        outputs = (outputs,)
    for output in outputs:
        node = getattr(output, "grad_fn", None) if isinstance(output, torch.Tensor) else getattr(output, "node", None)
        if node is not None:
            yield node


def _tag_graph(outputs):
    """Tags every node not tagged yet that the backward of `outputs` reaches."""
    marks = _marks.get(threading.get_ident())
    if marks is None:
        return
    pending = [(node, None) for node in _root_nodes(outputs)]
    while pending:
        node, consumer = pending.pop()
        if node is None:
            continue
        metadata = node.metadata
        if _TAG_KEY in metadata:
            continue
        seq = node._sequence_nr()
        hooks = consumer if seq >= _NO_SEQUENCE else marks.at(seq)
        metadata[_TAG_KEY] = hooks[0] if hooks else None
        if hooks:
            node.register_prehook(hooks[1])
            node.register_hook(hooks[2])
        pending.extend((edge[0], hooks) for edge in node.next_functions)


def _driving(original):
    def run_backward(*args, **kwargs):
        if _forward_mode[0]:
            try:
                outputs = args[0] if args else kwargs.get("t_outputs", kwargs.get("tensors", kwargs.get("outputs")))
                _tag_graph(outputs)
            except Exception:  # a profiler problem must not fail the user's backward
                pass
        token = native.context.drive_begin()
        try:
            return original(*args, **kwargs)
        finally:
            native.context.drive_end(token)

    run_backward.__wrapped__ = original
    run_backward.__name__ = getattr(original, "__name__", "run_backward")
    run_backward.__doc__ = getattr(original, "__doc__", None)
    return run_backward


def _scope_module():
    # The package exports the scope class under the module's name, hence the lookup by path.
    return importlib.import_module("..scope", __package__)


def install():
    """Wraps torch's backward entry, now when torch is imported, else right after torch.autograd
    loads (flagtree-profiler opens its session before the script imports torch). Sets up
    backward-by-forward-layer when the variable asks."""
    torch = sys.modules.get("torch")
    autograd = getattr(torch, "autograd", None)
    if autograd is not None:
        _wrap(torch, autograd)
    elif _watcher not in sys.meta_path:
        sys.meta_path.insert(0, _watcher)


def _wrap(torch, autograd):
    if _wrapped:
        return
    names = ["_engine_run_backward"] if hasattr(autograd, "_engine_run_backward") else ["backward", "grad"]
    # A torch without these entries (a stand-in module, a stripped build) has nothing to wrap.
    for name in (n for n in names if callable(getattr(autograd, n, None))):
        original = getattr(autograd, name)
        wrapper = _driving(original)
        setattr(autograd, name, wrapper)
        _wrapped.append((autograd, name, original, wrapper))
    engine = getattr(getattr(torch, "_C", None), "_autograd", None)
    if _env.backward_scopes() == "forward" and hasattr(engine, "_get_sequence_nr"):
        global _sequence_nr, _snapshot
        _sequence_nr, _snapshot = engine._get_sequence_nr, native.context.context_snapshot
        _forward_mode[0] = True
        _scope_module().set_boundary_hook(_mark)


class _AutogradImportWatcher:
    """A sys.meta_path finder, in place only while a session waits for torch: it lets the normal
    finders locate torch.autograd and wraps the loader so that _wrap runs once the module ran."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch.autograd":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _WrapAfterExec(spec.loader)
        return spec


class _WrapAfterExec:
    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):  # get_source, get_data, ... as the real loader has them
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        if _watcher in sys.meta_path:
            sys.meta_path.remove(_watcher)
            try:
                _wrap(sys.modules["torch"], module)
            except Exception:  # a profiler problem must not fail the user's import of torch
                pass


_watcher = _AutogradImportWatcher()


def uninstall():
    if _watcher in sys.meta_path:
        sys.meta_path.remove(_watcher)
    scope = _scope_module()
    if scope._boundary_hook is _mark:
        scope.set_boundary_hook(None)
    _forward_mode[0] = False
    _marks.clear()
    while _wrapped:
        owner, name, original, wrapper = _wrapped.pop()
        if getattr(owner, name, None) is wrapper:
            setattr(owner, name, original)
