"""How kernels compiled while a device_timer session is open get their stamps.

No pass of ours runs inside Triton's MLIR pipeline: Triton's stages inspection hook
(``triton.knobs.runtime.add_stages_inspection_hook``) lets us wrap the stage whose text the
target's stamper edits (stampers.py: "ptx" on NVIDIA, "llir" on CoreX), and the wrapper inserts
the stamps into that text and sets the kernel's metadata
``profile_scratch_size`` / ``profile_scratch_align`` so that Triton's launcher asks the profile
allocator (ours) for the slot pointer.

``triton.knobs.compilation.instrumentation_mode`` is set to our mode string while installed:
it is part of every kernel's compile options, hence of the in-memory and on-disk cache keys, so
stamped and plain binaries never share a cache entry, and kernels compiled before the session
are compiled again (once) when first launched in it. Everything is restored on uninstall.
"""
import threading
import warnings

from ..base import BackendUnavailable
from ...common import timer_tags
from ...kernel_scopes.options import MODE_JOINER
from ...triton_glue import stages as triton_stages, versions as triton_versions
from . import stampers

# Short: the mode is in every launch's cache key, which Triton spells and hashes at each launch.
# A new prefix (and align tag, timer_ring.h) with every change to what the stamps write: kernels
# stamped by an earlier version must never be taken from a cache for this one's.
MODE_PREFIX = "ftdt6"
SCRATCH_BYTES = 16

_lock = threading.Lock()
_installed = None  # the undo function while installed
# "scoped": kernels compiled with kernel-side scopes beside the stamps (timed by their scope
# buffers' header stamps, not stamped)
stats = {"stamped": 0, "not_stamped": 0, "not_stamped_kernels": [], "scoped": 0}


def mode_string(plane_bytes, lanes, records, stamper=stampers.PTX):
    """`records`: replay records per graph-captured launch baked into the stamps (0: none)."""
    suffix = "" if stamper == stampers.PTX else f":{stamper.name}"
    return f"{MODE_PREFIX}:{lanes}:{plane_bytes}:{records}{suffix}"  # lanes, plane bytes, graph records


def check_triton():
    """BackendUnavailable unless Triton has the hooks this route uses (3.6 or later: 3.5 has the
    profile allocator but neither the stages inspection hook nor instrumentation_mode)."""
    try:
        version = triton_versions.triton_version()
    except ImportError as error:
        raise BackendUnavailable(f"backend 'device_timer' needs triton: {error}") from None
    missing = triton_versions.missing_compiler_hooks()
    if missing:
        raise BackendUnavailable(f"backend 'device_timer' needs Triton 3.6 or later; triton "
                                 f"{version} lacks {', '.join(missing)}")


def _not_stamped(name, reason):
    stats["not_stamped"] += 1
    if len(stats["not_stamped_kernels"]) < 32:
        stats["not_stamped_kernels"].append(name)
    warnings.warn(f"flagtree.profiler: backend 'device_timer' cannot time kernel {name}: {reason}",
                  RuntimeWarning, stacklevel=3)


def stamp_stage(stage_fn, native, plane_bytes, lanes, records, stamper=stampers.PTX, originals=None,
                scoped=False):
    """`stamper.stage`, followed by the stamps (a kernel we cannot stamp runs untimed, with a
    warning). `originals` (a dict) keeps each stamped text's unstamped form for the later stages'
    guard (guard_stage). `scoped`: kernel-side scopes are compiled in beside the stamps, so a
    kernel that already has profile scratch is a scoped kernel (timed from its scope buffers)."""

    def stage(src, metadata):
        text = stage_fn(src, metadata)
        try:
            name = stamper.kernel_name(text)
        except stampers.NotStampable:
            name = metadata.get("name", "?")
        if scoped and metadata.get("profile_scratch_size"):
            stats["scoped"] += 1
            return text
        if metadata.get("profile_scratch_size"):
            reason = "it already uses profile scratch memory (another instrumentation)"
        else:
            try:
                stamped = stamper.stamp(text, native.device_timer.device_timer_name_kernel(name), plane_bytes, lanes,
                                        records)
            except stampers.NotStampable as error:
                reason = str(error)
            else:
                metadata["profile_scratch_size"] = SCRATCH_BYTES
                metadata["profile_scratch_align"] = timer_tags.current()
                stats["stamped"] += 1
                if originals is not None:
                    while len(originals) >= 16:  # a compile that failed between stages left its entry
                        originals.pop(next(iter(originals)))
                    originals[stamped] = (text, name)
                return stamped
        _not_stamped(name, reason)
        return text

    return stage


def guard_stage(stage_fn, originals, last):
    """A stage after the stamped one: if it rejects the stamped text (a toolchain that does not
    take the stamps' instructions), the kernel is compiled from its unstamped text and runs
    untimed, named in the metadata, instead of failing the user's compile."""

    def stage(src, metadata):
        original = originals.get(src) if isinstance(src, str) else None
        try:
            out = stage_fn(src, metadata)
        except Exception as error:
            if original is None:
                raise
            originals.pop(src, None)
            text, name = original
            metadata["profile_scratch_size"] = 0
            metadata["profile_scratch_align"] = 1
            stats["stamped"] -= 1
            _not_stamped(name, f"the compiler rejected the stamped code ({type(error).__name__}: "
                               f"{str(error)[:200]}); compiled without stamps")
            return stage_fn(text, metadata)
        if last and original is not None:
            originals.pop(src, None)
        return out

    return stage


def wrap_stages(stages, native, plane_bytes, lanes, records, stamper, scoped=False):
    """Wraps `stamper.stage` in `stages` (Triton's ordered dict of stage functions) and guards
    every stage after it. False when the compiler registers no such stage."""
    names = list(stages)
    if stamper.stage not in names:
        return False
    originals = {}
    at = names.index(stamper.stage)
    stages[stamper.stage] = stamp_stage(stages[stamper.stage], native, plane_bytes, lanes, records, stamper,
                                        originals, scoped)
    for name in names[at + 1:]:
        stages[name] = guard_stage(stages[name], originals, last=name == names[-1])
    return True


def install(native, plane_bytes, lanes, records, stamper=stampers.PTX, beside=None):
    """Kernels compiled from now on carry the stamps of `stamper` (until uninstall). `beside`:
    the instrumentation_mode of the kernel-side scopes' compiler hook, installed just before by
    the same backend; the two modes are joined into one (the cache key changes with either)."""
    global _installed
    with _lock:
        if _installed is not None:
            raise RuntimeError("backend 'device_timer': the compiler hook is already installed")
        previous_mode = triton_stages.instrumentation_mode()
        if previous_mode and previous_mode != beside:
            raise RuntimeError(f"backend 'device_timer': Triton's instrumentation_mode is already "
                               f"{previous_mode!r} (Triton's proton profiler, or backend='instrumentation'?); "
                               f"stop it first: one instrumentation at a time")

        def edit(stages):
            wrap_stages(stages, native, plane_bytes, lanes, records, stamper, scoped=bool(beside))

        undo_hook = triton_stages.chain_stages_hook(edit, MODE_PREFIX)
        own = mode_string(plane_bytes, lanes, records, stamper)
        undo_mode = triton_stages.set_instrumentation_mode(f"{beside}{MODE_JOINER}{own}" if beside else own)

        def undo():
            undo_mode()
            undo_hook()

        _installed = undo


def uninstall():
    global _installed
    with _lock:
        if _installed is not None:
            undo, _installed = _installed, None
            undo()


def installed():
    return _installed is not None
