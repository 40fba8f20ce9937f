"""Compiled kernels and their launchers: the profile allocator a launcher asks for a kernel's
profile scratch memory, whether a driver's launcher asks it at all, the interpreter's launch, and
the CompiledKernel objects alive in this process.

compiled_kernels() is also where seeing kernels compiled before a session starts: the objects
libraries hold (FlagGems' LibEntry, torch inductor's launchers) are among them; redirecting one's
launcher, or stamping it at first sight, goes beside it here.
"""
import gc
import sys
import types


def _allocation():
    from triton.runtime import _allocation  # deferred: triton is heavy and optional

    return _allocation


def profile_allocator():
    """The profile allocator Triton's launchers call now for a kernel's profile scratch memory
    (Triton 3.5-3.9: ``triton.runtime._allocation``; earlier ones have none, see
    versions.missing_compiler_hooks)."""
    return _allocation()._profile_allocator.get()


def profile_allocator_getter():
    """() -> the profile allocator Triton's launchers would call now (as profile_allocator(),
    without the module look-up: asked at every launch by the device timer's slot launcher)."""
    return _allocation()._profile_allocator.get


def install_profile_allocator(allocator):
    """Makes `allocator` Triton's profile allocator for the rest of the process: a kernel compiled
    while it is installed (with stamps that write a slot) may be launched after its owner is gone,
    kept by a library or by inductor, and Triton's own answer would then be wrong: before 3.8 its
    NullAllocator raises, from 3.8 its default profile scratch is smaller than what the stamps
    write. Returns the fallback for requests that are not `allocator`'s: the allocator it
    replaced, or, where none was set and Triton has a default profile scratch, a function asking
    Triton's driver for it, as Triton itself would."""
    allocation = _allocation()
    previous = allocation._profile_allocator.get()
    allocation.set_profile_allocator(allocator)
    if type(previous).__name__ == "NullAllocator" and hasattr(allocation, "has_profile_allocator"):
        return _default_profile_scratch
    return previous


def _default_profile_scratch(size, alignment, stream):
    from triton.runtime import driver  # deferred: triton is heavy and optional

    return driver.active.allocate_default_profile_scratch(size, alignment, stream)


def set_profile_allocator(allocator):
    """Makes `allocator(size, alignment, stream)` Triton's profile allocator (3.5-3.9); returns the
    undo, which puts back the one found here."""
    allocation = _allocation()
    previous = allocation._profile_allocator.get()
    allocation.set_profile_allocator(allocator)
    return lambda: allocation.set_profile_allocator(previous)


def code_names(code):
    """The names a function's code reads, its nested functions' included."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return names


def launcher_passes_profile_scratch(driver_cls):
    """Whether the code of a Triton driver's module (its launcher) asks Triton's profile allocator
    for the kernel's profile scratch pointer (``_allocation._profile_allocator``): NVIDIA's from
    3.5 on; a vendor driver only if its launcher was written to."""
    module = sys.modules.get(driver_cls.__module__)
    for value in vars(module).values() if module else ():
        functions = []
        if isinstance(value, type) and value.__module__ == module.__name__:
            functions = [f for f in vars(value).values() if isinstance(f, types.FunctionType)]
        elif isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            functions = [value]
        if any("_profile_allocator" in code_names(f.__code__) for f in functions):
            return True
    return False


def compiled_kernels():
    """Every ``CompiledKernel`` alive in this process, if Triton's compiler was imported (else
    none; nothing is imported here). Each has ``asm`` (stage name -> code; "cubin" bytes on
    NVIDIA), ``metadata`` and, once loaded, ``function`` and ``run`` (its launcher), on 3.2-3.9."""
    compiler = sys.modules.get("triton.compiler.compiler")
    kind = getattr(compiler, "CompiledKernel", None)
    if kind is None:
        return []
    # type(), not isinstance(): isinstance reads __class__, which some lazy module proxies
    # (torch.distributed's) answer with a deprecation warning.
    return [obj for obj in gc.get_objects() if type(obj) is kind]


# Modules of torch inductor's static launcher, newest first (its kernels are not CompiledKernels).
_STATIC_LAUNCHERS = ("torch._inductor.runtime.static_triton_launcher", "torch._inductor.runtime.static_cuda_launcher")


def triton_kernel_names():
    """The names of every Triton kernel alive in this process, from one pass over the objects: each
    ``CompiledKernel``'s and each of inductor's statically launched kernels' (``name``). Nothing is
    imported; costs one walk of the heap, so callers keep the result."""
    kinds = [getattr(sys.modules.get("triton.compiler.compiler"), "CompiledKernel", None)]
    for module in _STATIC_LAUNCHERS:
        launcher = sys.modules.get(module)
        kinds += [getattr(launcher, "StaticallyLaunchedTritonKernel", None),
                  getattr(launcher, "StaticallyLaunchedCudaKernel", None)]
    kinds = {kind for kind in kinds if isinstance(kind, type)}
    if not kinds:
        return set()
    names = set()
    for obj in gc.get_objects():
        if type(obj) in kinds:  # type(), as compiled_kernels() says why
            name = getattr(obj, "name", None)
            if isinstance(name, str):
                names.add(name)
    return names


def interpreter_module():
    """Triton's interpreter (``triton.runtime.interpreter``; ImportError without Triton): its
    ``interpreter_builder.grid_dim`` is the grid of the launch running, on 3.1-3.9; where its
    launches enter, interpreter.install_launch says."""
    from triton.runtime import interpreter  # deferred: triton is heavy and optional

    return interpreter
