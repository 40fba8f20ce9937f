"""How kernels compiled inside an instrumentation session get scope records.

Route (no patching of Triton's sources): Triton's NVIDIA compiler has an instrumentation point
between TritonGPU IR and LLVM IR, made for Triton's built-in proton dialect, which libtriton
compiles in (``triton._C.libtriton.proton``). We put our pass pipeline there:

* ttgpuir -> llvmir: ``add_convert_proton_to_protongpu`` (proton.record -> clock reads stored in a
  per-block buffer in shared or global memory), CSE, ``add_allocate_proton_shared_memory``;
* llvmir -> llvm: ``add_allocate_proton_global_scratch_buffer`` (Triton <= 3.6; later versions fold
  it into the next pass) and ``add_convert_proton_nvidia_gpu_to_llvm``.

Triton exposes that point as a class attribute (3.5/3.6) or through registered callbacks (3.7+);
triton_glue/compiler_points.py installs either.

``triton.knobs.compilation.instrumentation_mode`` is set to our options' string while the hook is
installed: Triton puts it in the kernel's compile options, so it is part of the in-memory and
on-disk cache keys: instrumented and plain binaries never share an entry. Everything installed is
restored exactly on uninstall. Triton's own profiler (proton) uses the same point; both cannot be
active at once (clear error).
"""
import re
import threading

from .. import language
from ..backends.base import BackendUnavailable
from ..triton_glue import compiler_points, stages as triton_stages, target as triton_target, versions
from .warp_specialized import hoisted_module

PROFILE_BUFFER_ALIGNMENT = 128
# Shared memory per block by compute capability, used when no device can be asked (CPU compiles).
_MAX_SHARED_BY_ARCH = {80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448, 100: 232448,
                       103: 232448, 120: 101376}

_lock = threading.Lock()
_installed = None  # undo function while installed
# Total warps of the module being lowered on this thread, set by our stages hook: a
# warp-specialized kernel has more warps than num_warps (4 + 4 + 4 = 12 is common), and Triton's
# lowering needs the block's buffer to split into a power-of-two segment per warp.
_lowering = threading.local()


def total_warps(ttgir):
    """The block's warps once Triton allocates warp groups: num_warps plus, for the widest
    ttg.warp_specialize op, its partitions' warps, rounded up to whole warp groups of 4 (as seen
    in Triton 3.9's total-num-warps: 4 + 4 + 4 -> 12, 4 + 1 -> 8)."""
    base = re.search(r'"ttg.num-warps" = (\d+)', ttgir)
    warps = int(base.group(1)) if base else 4
    extra = [sum(int(n) for n in re.findall(r"\) num_warps\((\d+)\) \{", chunk))
             for chunk in ttgir.split("ttg.warp_specialize(")[1:]]
    if not extra:
        return warps
    return -(-(warps + max(extra)) // 4) * 4


def block_buffer_bytes(requested, warps):
    """The largest per-block buffer <= `requested` (at least 8 bytes a warp) that splits into
    one power-of-two segment per warp; 0 (Triton chooses) stays 0."""
    if requested <= 0 or warps <= 0:
        return requested
    per_warp = max(8, requested // warps)
    return (1 << (per_warp.bit_length() - 1)) * warps


# What triton_proton() and route() found (Triton's build does not change in a process): each
# session start asked both several times, each through an import and attribute look-ups.
_found = {}


def triton_proton():
    """Triton's compiled-in proton dialect bindings, or BackendUnavailable saying why not (kept
    once found; an answer of not found is asked again)."""
    if "proton" not in _found:
        _found["proton"] = _triton_proton()
    return _found["proton"]


def _triton_proton():
    try:
        version = versions.triton_version()
        proton = compiler_points.libtriton("proton")
    except ImportError as error:
        raise BackendUnavailable(f"backend 'instrumentation' needs Triton 3.6 or later with its proton "
                                 f"dialect (triton._C.libtriton.proton): {error}") from None
    for name in ("create_proton_record", "add_convert_proton_to_protongpu", "add_allocate_proton_shared_memory",
                 "add_convert_proton_nvidia_gpu_to_llvm", "get_scope_id_names", "load_dialects"):
        if not hasattr(proton, name):
            raise BackendUnavailable(f"backend 'instrumentation': triton {version}'s proton dialect "
                                     f"lacks {name}; supported: Triton 3.5, 3.6 and later")
    return proton


def route():
    """'register' (Triton 3.7+), 'class_attribute' (3.5/3.6), or BackendUnavailable (kept once
    found, as triton_proton())."""
    if "route" not in _found:
        _found["route"] = _route()
    return _found["route"]


def _route():
    try:
        found = compiler_points.point_route()
    except ImportError as error:
        raise BackendUnavailable(f"backend 'instrumentation' needs Triton's NVIDIA backend: {error}") from None
    if found is None:
        raise BackendUnavailable(f"backend 'instrumentation': triton {versions.triton_version()} has no compiler "
                                 f"instrumentation point (needs Triton 3.6 or later)")
    if "compilation.instrumentation_mode" in versions.missing_compiler_hooks():
        # Triton 3.5 has the point but keeps the mode in each launch's options, not in a knob:
        # without it instrumented and plain kernels would share Triton's cache entries.
        raise BackendUnavailable(f"backend 'instrumentation': triton {versions.triton_version()} lacks "
                                 f"triton.knobs.compilation.instrumentation_mode (needs Triton 3.6 or later)")
    return found


def max_shared_memory(arch):
    """Bytes of shared memory a block may use: from the current device if there is one."""
    try:
        return int(triton_target.current_device_properties()["max_shared_mem"])
    except Exception:  # no GPU (CPU compile for tests): the architecture's documented limit
        return _MAX_SHARED_BY_ARCH.get(arch, 101376)


def _enum(proton, enum_name, value):
    return getattr(getattr(proton, enum_name), value.upper())


class _Pipelines:
    """Our two pass pipelines for one set of options."""

    def __init__(self, options, arch=None):
        self.options = options
        self._arch = arch
        self.proton = triton_proton()

    @property
    def arch(self):
        """The target's architecture, asked at the first lowering (a session that compiles
        nothing never asks the driver)."""
        if self._arch is None:
            self._arch = current_arch()
        return self._arch

    def load_dialects(self, context):
        self.proton.load_dialects(context)

    def to_llvmir(self, pm):
        passes = compiler_points.libtriton("passes")
        p, o = self.proton, self.options
        warps = getattr(_lowering, "warps", None)
        size = block_buffer_bytes(o.buffer_size, warps) if warps else o.buffer_size
        p.add_convert_proton_to_protongpu(
            pm, p.METRIC_TYPE.CYCLE, p.SAMPLING_STRATEGY.NONE, "", _enum(p, "GRANULARITY", o.granularity),
            _enum(p, "BUFFER_STRATEGY", o.buffer_strategy), _enum(p, "BUFFER_TYPE", o.buffer_type),
            size, max_shared_memory(self.arch), 1, PROFILE_BUFFER_ALIGNMENT, o.clock == 64)
        passes.common.add_cse(pm)
        p.add_allocate_proton_shared_memory(pm)

    def to_llvm(self, pm):
        if hasattr(self.proton, "add_allocate_proton_global_scratch_buffer"):
            self.proton.add_allocate_proton_global_scratch_buffer(pm)
        self.proton.add_convert_proton_nvidia_gpu_to_llvm(pm)


class _ClassAttributeHook:
    """The object Triton 3.5/3.6 calls at CUDABackend.instrumentation."""

    def __init__(self, pipelines):
        self.pipelines = pipelines
        self.stages = {"ttgpuir_to_llvmir": pipelines.to_llvmir, "llvmir_to_llvm": pipelines.to_llvm}

    def __bool__(self):
        return True

    def load_dialects(self, context):
        self.pipelines.load_dialects(context)

    def patch(self, stage, pm, context):
        self.pipelines.load_dialects(context)
        if stage in self.stages:
            self.stages[stage](pm)


_IN_USE = "; stop it before start(backend='instrumentation')"


def _install_class_attribute(pipelines):
    try:
        return compiler_points.install_class_attribute(_ClassAttributeHook(pipelines))
    except RuntimeError as error:
        raise RuntimeError(f"backend 'instrumentation': {error}{_IN_USE}") from None


def _install_register(pipelines):
    callbacks = dict(zip(compiler_points.SCOPE_POINTS, (pipelines.load_dialects, pipelines.to_llvmir,
                                                        pipelines.to_llvm)))
    try:
        return compiler_points.install_register(callbacks)
    except RuntimeError as error:
        raise RuntimeError(f"backend 'instrumentation': {error}{_IN_USE}") from None


def _edit_stages(stages):
    """Learns each module's total warps just before its TritonGPU -> LLVM lowering, and moves the
    records of warp-specialized loops where the partitioner keeps them (warp_specialized.py)."""
    llir = stages.get("llir")
    if llir is not None:
        stages["llir"] = lambda src, metadata: _lower_knowing_warps(llir, src, metadata)
    ttgir = stages.get("ttgir")
    if ttgir is not None:
        stages["ttgir"] = lambda src, metadata: ttgir(hoisted_module(src), metadata)


def _lower_knowing_warps(llir, src, metadata):
    try:
        _lowering.warps = total_warps(str(src))
    except Exception:  # a module we cannot read: the mode's size as given
        _lowering.warps = None
    try:
        return llir(src, metadata)
    finally:
        _lowering.warps = None


def current_arch():
    try:
        return int(triton_target.current_target().arch)
    except Exception:
        return 90


def install(options, arch=None):
    """Kernels compiled from now on carry scope records (until uninstall)."""
    global _installed
    with _lock:
        if _installed is not None:
            raise RuntimeError("backend 'instrumentation': the compiler hook is already installed")
        pipelines = _Pipelines(options, arch)
        undo_point = (_install_register if route() == "register" else _install_class_attribute)(pipelines)
        undo_stages = triton_stages.chain_stages_hook(_edit_stages, "flagtree") or (lambda: None)
        undo_mode = triton_stages.set_instrumentation_mode(options.compiler_mode())
        language._set_enabled(True, options.triton)

        def undo():
            language._set_enabled(False, False)
            undo_mode()
            undo_stages()
            undo_point()

        _installed = undo


def uninstall():
    global _installed
    with _lock:
        if _installed is not None:
            undo, _installed = _installed, None
            undo()


def installed():
    return _installed is not None
