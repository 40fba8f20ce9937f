"""Every use of Triton's internals, in one place: the rest of the package calls these modules'
public functions and never imports ``triton.runtime``, ``triton.compiler``, ``triton.knobs``,
``triton.backends``, ``triton._C`` or ``triton._instrumentation`` itself
(tests/core/test_structure.py keeps it so).

By concern:

* versions.py: the Triton version and which of its hooks this build has; every version check.
* launch_hooks.py: Triton's launch enter/exit hooks and kernel-load hook, and chaining ours
  beside whatever is installed.
* stages.py: the compiler's stages (the stages inspection hook, the stages a backend
  registers) and ``instrumentation_mode``, the cache-key part of an instrumented compile.
* compiler_points.py: the compiler's instrumentation point where Triton's proton passes go
  (a class attribute on 3.5/3.6, ``triton._instrumentation.register_instrumentation`` later),
  and libtriton's compiled-in modules (proton, ir, passes).
* target.py: the active driver, its target and device, the installed compiler backends.
* restamp.py, ptxas_choice.py: a compiled kernel's kept code edited and built again (with the
  ptxas that takes its PTX) into a launcher of its own.
* kernels.py: compiled kernels and their launchers: the profile allocator a launcher asks for
  scratch memory, the interpreter's module, the CompiledKernel objects alive in the process.
* interpreter.py: where a launch enters Triton's interpreter on each version (a class-level
  ``InterpretedFunction.run``, or, on 3.1-3.5, a per-instance closure beside ``__getitem__``) and
  the ``triton.jit`` options its kernels keep.

Supported: Triton 3.1 to 3.9 (launch hooks from 3.1, which FlagTree's vendor builds ship: its
CompiledKernel has class-level launch hooks its launcher calls; compiler hooks and the profile
allocator from 3.5).
Nothing here imports Triton at module level: Triton is heavy and optional.
"""
