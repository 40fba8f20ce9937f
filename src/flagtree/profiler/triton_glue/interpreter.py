"""Triton's interpreter (TRITON_INTERPRET=1, ``triton.runtime.interpreter``): where a launch
enters it on each version, and the ``triton.jit`` options its kernels keep.

Two shapes of ``InterpretedFunction``, told apart by the class itself, not by the version:

* a ``run(self, *args, grid, warmup, **kwargs)`` method on the class, which ``kernel[grid]``
  (``KernelInterface.__getitem__``) and the autotuner both call (Triton 3.6 and later, checked on
  3.6.0 and 3.9.0);
* a ``run`` closure each instance gets in ``__init__`` (the autotuner and heuristics call it),
  and a class ``__getitem__`` that makes the launch (a ``GridExecutor``) without going through
  it (Triton 3.1 to 3.5, checked on 3.1.0, 3.3.1 and 3.5.1).

install_launch puts one launch function in front of both shapes: on the second, a data
descriptor at ``InterpretedFunction.run`` (the closures stay in each instance's ``__dict__``, kernels
made before it included) and a ``__getitem__`` that goes through ``run``, as the first shape's does.

jit_options: ``triton.jit``'s options (``launch_metadata`` among them) as the interpreter keeps
them: ``kwargs`` from 3.5, ``rewriter.kwargs`` on 3.3/3.4; Triton 3.1's ``triton.jit`` drops them
under the interpreter (``InterpretedFunction(fn)``), which keeps_jit_options tells.
"""
import inspect
import threading

from .kernels import interpreter_module

_beneath = threading.local()  # .recorded: whether the launch under way was recorded beneath the caller


class _PerInstanceRun:
    """``InterpretedFunction.run`` on Triton 3.1-3.5 while a launch function is installed: a data
    descriptor, so it wins over the closure ``__init__`` keeps in each instance's ``__dict__``
    (which it stores there, as before, for the launch function to call)."""

    def __init__(self, function):
        self.function = function

    def __get__(self, interpreted, owner=None):
        if interpreted is None:
            return self.function
        function = self.function

        def run(*args, grid, warmup=False, **kwargs):
            return function(interpreted, *args, grid=grid, warmup=warmup, **kwargs)

        return run

    def __set__(self, interpreted, value):
        vars(interpreted)["run"] = value

    def __delete__(self, interpreted):
        del vars(interpreted)["run"]


def _own_closure(interpreted, *args, grid, warmup, **kwargs):
    """The launch of Triton 3.1-3.5: the closure ``InterpretedFunction.__init__`` made."""
    return vars(interpreted)["run"](*args, grid=grid, warmup=warmup, **kwargs)


def _getitem_through_run(interpreted, grid):
    return lambda *args, **kwargs: interpreted.run(*args, grid=grid, warmup=False, **kwargs)


def install_launch(wrap):
    """Puts a launch function in front of every launch Triton's interpreter runs.

    `wrap(original)` returns ``run(interpreted, *args, grid, warmup, **kwargs)``, which launches
    with ``original(interpreted, *args, grid=grid, warmup=warmup, **kwargs)``; `interpreted` is
    the ``InterpretedFunction`` (``.fn`` the Python function, ``.arg_names``). Installs stack
    (each wraps the one before). Returns the undo: in order it restores what was there; out of
    order its launch function only forwards from then on. ImportError without Triton."""
    cls = interpreter_module().InterpretedFunction
    current = inspect.getattr_static(cls, "run", None)
    own = "run" in vars(cls)
    per_instance = current is None or isinstance(current, _PerInstanceRun)
    if current is None:
        original = _own_closure
    else:
        original = current.function if per_instance else current
    state = {"active": True}
    wrapped = wrap(original)

    def run(interpreted, *args, grid, warmup, **kwargs):
        launch = wrapped if state["active"] else original
        return launch(interpreted, *args, grid=grid, warmup=warmup, **kwargs)

    run.__wrapped__ = original
    installed = _PerInstanceRun(run) if per_instance else run
    getitem = vars(cls).get("__getitem__")
    cls.run = installed
    if current is None:
        cls.__getitem__ = _getitem_through_run

    def undo():
        state["active"] = False
        if vars(cls).get("run") is not installed:
            return  # another launch function went on top since: ours now only forwards
        if own:
            cls.run = current
        else:
            del cls.run
        if current is None:
            if getitem is None:
                del cls.__getitem__
            else:
                cls.__getitem__ = getitem

    return undo


def run_beneath(original, interpreted, args, grid, warmup, kwargs):
    """Runs a launch through what lies beneath a recording launch function (its `original`);
    returns (the launch's result, whether this launch function is to record it). Backends whose
    launch functions stack (an interpreter session and a tianshu session open at once) would each
    record every launch, and each record goes to every open session: counted twice in each. The
    innermost records; those above it only time. Reset before the launch, so that kernels a
    launch function runs before calling `original` (launch_metadata's) are recorded on their own."""
    _beneath.recorded = False
    result = original(interpreted, *args, grid=grid, warmup=warmup, **kwargs)
    first = not _beneath.recorded
    _beneath.recorded = True
    return result, first


def launch_entry():
    """What ``InterpretedFunction.run`` is on the class now (None on Triton 3.1-3.5 while nothing
    is installed): tests and checks compare it before and after a session."""
    return inspect.getattr_static(interpreter_module().InterpretedFunction, "run", None)


def keeps_jit_options():
    """Whether this Triton's interpreter keeps ``triton.jit``'s options (``launch_metadata``)
    with its kernels: not on 3.1, whose ``InterpretedFunction(fn)`` takes none."""
    init = interpreter_module().InterpretedFunction.__init__
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(init).parameters.values())


def jit_options(interpreted):
    """The ``triton.jit`` options an ``InterpretedFunction`` keeps (a dict), or None."""
    options = getattr(interpreted, "kwargs", None)
    if options is None:
        options = getattr(getattr(interpreted, "rewriter", None), "kwargs", None)
    return options
