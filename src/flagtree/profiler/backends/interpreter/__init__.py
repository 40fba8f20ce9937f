"""The interpreter backend: Triton's interpreter mode (TRITON_INTERPRET=1) runs kernels on the
CPU, with no device and no launch hooks. This backend wraps the interpreter's launch entry
and records each launch with its host-measured duration through the same native contexts,
scopes, states and writers as a GPU backend, so the whole pipeline runs on a CPU-only machine.
"""

import importlib.util
import inspect
import platform

from ..base import Backend, BackendUnavailable, SharedUse
from ...native_core import native
from ...triton_glue.interpreter import install_launch, run_beneath
from ...triton_glue.kernels import interpreter_module
from ...triton_glue.target import interpreter_active


def _bound_arguments(fn_self, args, kwargs):
    """The launch's arguments by name (defaults included), as a grid function's `meta` sees them."""
    parameters = inspect.signature(fn_self.fn).parameters
    names = list(getattr(fn_self, "arg_names", None) or parameters)
    bound = dict(zip(names, args))
    for parameter in parameters.values():
        if parameter.name in bound:
            continue
        if parameter.name in kwargs:
            bound[parameter.name] = kwargs[parameter.name]
        elif parameter.default is not inspect.Parameter.empty:
            bound[parameter.name] = parameter.default
    bound.update((k, v) for k, v in kwargs.items() if k not in bound)
    return bound


def _launch_grid(fn_self, args, grid, kwargs):
    """This launch's grid as a tuple of at most three ints, or None when it cannot be evaluated
    (the interpreter then evaluates it itself and reports the problem)."""
    try:
        if callable(grid):
            grid = grid(_bound_arguments(fn_self, args, kwargs))
        dims = tuple(int(g) for g in grid)
    except Exception:
        return None
    return dims if len(dims) <= 3 else None


class InterpreterBackend(Backend):
    name = "interpreter"

    def __init__(self):
        self._use = SharedUse()
        self._undo_launch = None
        #: set by the launch-metadata hook: called as fn(interpreted_fn, args, grid, kwargs) before each launch
        self.before_launch = None

    def unavailable_reason(self):
        if importlib.util.find_spec("triton") is None:
            return "triton is not installed"
        if not interpreter_active():
            return "Triton's interpreter mode is off (set TRITON_INTERPRET=1 before triton is imported)"
        return None

    def acquire(self, options):
        if not interpreter_active():
            # Without it Triton would look for a GPU driver at the first launch and fail there.
            raise BackendUnavailable("the interpreter backend needs Triton's interpreter mode, which is off: set "
                                     "TRITON_INTERPRET=1 before triton is imported (flagtree-profiler -b "
                                     "interpreter sets it for the script it runs)")
        self._use.acquire(self._patch)

    def release(self):
        self._use.release(self._unpatch)

    def _patch(self):
        try:
            interpreter = interpreter_module()
        except ImportError as error:
            raise BackendUnavailable(f"the interpreter backend needs triton: {error}") from None
        backend = self

        def wrap(original):
            def run(fn_self, *args, grid, warmup, **kwargs):
                if warmup:
                    return original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
                return backend._timed_launch(original, interpreter, fn_self, args, grid, warmup, kwargs)

            return run

        self._undo_launch = install_launch(wrap)

    def _unpatch(self):
        if self._undo_launch is not None:
            self._undo_launch()
            self._undo_launch = None

    def _timed_launch(self, original, interpreter, fn_self, args, grid, warmup, kwargs):
        name = fn_self.fn.__name__
        # The grid is evaluated here, once per launch, and handed to the interpreter as a tuple:
        # the interpreter's own evaluated grid sits in one builder shared by every thread.
        evaluated = _launch_grid(fn_self, args, grid, kwargs)
        if evaluated is not None:
            grid = evaluated  # as Triton gives it to launch_metadata on a GPU: not padded
        if self.before_launch is not None:
            self.before_launch(fn_self, args, grid, kwargs)
        start = native.core.monotonic_ns()
        result, record = run_beneath(original, fn_self, args, grid, warmup, kwargs)
        end = native.core.monotonic_ns()
        if not record:  # a launch function beneath recorded it (tianshu's): once for every session
            return result
        # A launch that raised ran no kernel, as on a GPU: only finished launches are recorded.
        dims = evaluated + (1,) * (3 - len(evaluated)) if evaluated is not None else (0, 0, 0)
        num_warps = int(kwargs.get("num_warps", 4) or 4)
        native.session.record_host_kernel(name, start, end, dims, (num_warps * 32, 1, 1), native.DeviceType.CPU, 0, 0)
        return result

    def device_info(self):
        return {"CPU": {"0": {"arch": platform.machine(), "num_sms": 0, "clock_rate": 0,
                              "memory_clock_rate": 0, "bus_width": 0}}}

    def describe(self):
        # The interpreter runs every kernel on this host's CPU: that is the one device.
        cpu = {"index": 0, "name": platform.processor() or platform.machine(), "arch": platform.machine(),
               "type": "CPU"}
        return {"backend": self.name, "note": "Triton interpreter mode: host-measured kernel durations",
                "devices": [cpu]}
