"""The NVIDIA compiler's instrumentation point, where Triton's own proton passes run between
TritonGPU IR and LLVM IR, and libtriton's compiled-in modules our passes and parsers use.

Two ways Triton exposes the point:

* Triton 3.5 and 3.6: the class attribute ``CUDABackend.instrumentation`` (an object with
  ``patch(stage, pm, context)`` and ``load_dialects(context)``);
* later Triton (3.7+, checked on 3.9): ``triton._instrumentation.register_instrumentation(point=...,
  backend="nvidia", callback=...)`` with points "load-dialects", "ttgpuir-to-llvmir",
  "llvmir-to-llvm". The same module is where a route that hooks other points (a vendor backend's)
  registers: install_register takes any point names.

Triton 3.2 to 3.4 have neither (point_route says so).
"""
import importlib

#: The points our kernel-side scope pipelines fill, in the order Triton runs them.
SCOPE_POINTS = ("load-dialects", "ttgpuir-to-llvmir", "llvmir-to-llvm")


def libtriton(name):
    """``triton._C.libtriton.<name>`` (e.g. "proton", "ir", "passes", "nvidia"); ImportError when
    this build lacks it. Present in every Triton we support; "proton" carries the passes we use
    from 3.5 on (callers check the functions they need)."""
    libtriton_module = importlib.import_module("triton._C.libtriton")
    try:
        return getattr(libtriton_module, name)  # submodules of the extension, not in sys.modules
    except AttributeError:
        raise ImportError(f"cannot import name {name!r} from 'triton._C.libtriton'") from None


def is_compiler_builder(builder):
    """Whether `builder` is libtriton's IR builder (a compile), not the interpreter's stand-in."""
    try:
        ir = libtriton("ir")
    except ImportError:
        return False
    return isinstance(builder, ir.builder)


def is_gluon_semantic(semantic):
    """Whether `semantic` is Gluon's code generator (Triton 3.5 and later have Gluon)."""
    try:
        from triton.experimental.gluon.language._semantic import GluonSemantic  # deferred: triton is heavy and optional
    except ImportError:
        return False
    return isinstance(semantic, GluonSemantic)


def _register_module():
    try:
        points = importlib.import_module("triton._instrumentation")
    except ImportError:
        return None
    return points if hasattr(points, "register_instrumentation") else None


def _cuda_backend():
    from triton.backends.nvidia.compiler import CUDABackend  # deferred: triton is heavy and optional

    return CUDABackend


def point_route():
    """'register' (Triton 3.7-3.9), 'class_attribute' (3.5/3.6), or None (no instrumentation
    point: 3.2-3.4). ImportError when Triton's NVIDIA backend cannot be imported."""
    if _register_module() is not None:
        return "register"
    return "class_attribute" if "instrumentation" in vars(_cuda_backend()) else None


def install_class_attribute(hook):
    """Puts `hook` at ``CUDABackend.instrumentation`` (Triton 3.5/3.6); returns the undo.
    RuntimeError when something (Triton's proton profiler) is there already."""
    cuda_backend = _cuda_backend()
    previous = vars(cuda_backend).get("instrumentation")
    if previous:
        raise RuntimeError("Triton's compiler instrumentation is already in use (Triton's proton profiler?)")
    cuda_backend.instrumentation = hook

    def undo():
        cuda_backend.instrumentation = previous

    return undo


def install_register(callbacks, backend="nvidia"):
    """Registers `callbacks` ({point: callback}) with ``triton._instrumentation`` for `backend`
    (Triton 3.7-3.9); returns the undo. RuntimeError naming the points already taken."""
    points = _register_module()
    taken = [p for p in callbacks if (p, backend) in getattr(points, "_callbacks", {})]
    if taken:
        raise RuntimeError(f"Triton's instrumentation points {taken} are already in use (Triton's proton profiler?)")
    for point, callback in callbacks.items():
        points.register_instrumentation(point=point, backend=backend, callback=callback)

    def undo():
        for point in callbacks:
            points.unregister_instrumentation(point=point, backend=backend)

    return undo
