"""Triton's interpreter as Triton 3.1 to 3.5 shape ``InterpretedFunction`` (read in
triton/runtime/interpreter.py and runtime/jit.py of the 3.1.0, 3.3.1 and 3.5.1 wheels), on top of
the installed Triton's interpreter, which runs the kernel:

* no ``run`` method on the class: ``__init__`` gives each instance a ``run`` closure (what the
  autotuner and heuristics call, with ``grid=`` among the keywords, ``warmup`` not always);
* the class's ``__getitem__`` launches without going through that closure;
* ``triton.jit``'s options: 3.1's ``triton.jit`` makes ``InterpretedFunction(fn)`` and drops them;
  3.3 keeps them only on ``self.rewriter.kwargs``; 3.5 also on ``self.kwargs``.

``install(monkeypatch, shape)`` ("3.1", "3.3" or "3.5") puts a fresh class of that shape at
``triton.runtime.interpreter.InterpretedFunction`` and returns it; build kernels with
``cls(python_function, **jit_options)`` (the Python function under a ``triton.jit`` kernel:
``kernel.fn``)."""
import types

import pytest

from flagtree.profiler.triton_glue.versions import triton_version

SHAPES = ("3.1", "3.3", "3.5")


def _launch(real, grid, args, kwargs):
    """The installed Triton's interpreter runs the launch (its own class method, never patched
    here: the profiler patches the stand-in class)."""
    kwargs = {k: v for k, v in kwargs.items() if k != "grid"}
    warmup = kwargs.pop("warmup", False)
    return type(real).run(real, *args, grid=grid, warmup=warmup, **kwargs)


def _make(shape, real_cls):
    class InterpretedFunction:
        def _setup(self, fn, options):
            self.fn = fn
            self.arg_names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
            real = real_cls(fn)
            if shape != "3.1":
                self.rewriter = types.SimpleNamespace(fn=fn, kwargs=options)
            if shape == "3.5":
                self.kwargs = options

            def run(*args, **kwargs):
                return _launch(real, kwargs["grid"], args, kwargs)

            self.run = run
            self._real = real

        def __getitem__(self, grid):
            return lambda *args, **kwargs: _launch(self._real, grid, args, kwargs)

    if shape == "3.1":
        class Shape(InterpretedFunction):
            def __init__(self, fn):  # 3.1: the function only, no triton.jit options
                self._setup(fn, {})
    else:
        class Shape(InterpretedFunction):
            def __init__(self, fn, **options):
                self._setup(fn, options)
    Shape.__qualname__ = f"InterpretedFunction (Triton {shape} shape)"
    return Shape


def install(monkeypatch, shape):
    from triton.runtime import interpreter  # deferred: only the tests that ask import Triton's interpreter

    if "run" not in vars(interpreter.InterpretedFunction):
        pytest.skip(f"Triton {triton_version()}'s interpreter is itself of the older shape: the tests that "
                    f"launch through the real one cover it here")
    cls = _make(shape, interpreter.InterpretedFunction)
    monkeypatch.setattr(interpreter, "InterpretedFunction", cls)
    return cls
