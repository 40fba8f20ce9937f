"""A compiled kernel's code, edited and built again into a launcher of its own: how a kernel
compiled without stamps (before a session, in another process, held by a library) is stamped at
its first launch in a session.

Triton keeps each stage's text of a compiled kernel in ``CompiledKernel.asm`` (3.2-3.9). The text
of the stage a stamper edits ("ptx" on NVIDIA, "llir" on CoreX) is edited, the target's binary
stage (its compiler's ``add_stages``, the stage named by its ``binary_ext``: ptxas on NVIDIA) turns
it into a binary, the active driver loads it (``utils.load_binary``) and makes a launcher for it
with the kernel's metadata asking for profile scratch (``launcher_cls``). Callers pass the
kernel's ``function`` to its launcher themselves (``JITFunction.run``, ``LibEntry``, inductor's
launchers capture it): the launchers made here put the stamped function in its place.

torch inductor's static CUDA launcher (``StaticallyLaunchedCudaKernel``, torch 2.7 and later)
keeps no stage text, only the path of the cubin in Triton's cache folder (forgotten once loaded),
where the kernel's other stages lie beside it: the stamped copy is built from those, and launched by the static launcher's
own ``_launch_kernel`` with the profile scratch argument (which it passes as a null pointer)
asked from Triton's profile allocator.
"""
import hashlib
import os
import sys
import types

from . import ptxas_choice


class NotRestampable(Exception):
    """Why a compiled kernel cannot be built again with an edited stage (its reason is kept)."""


def _compiler_parts():
    from triton.backends.compiler import Language  # deferred: triton is heavy and optional
    from triton.compiler.compiler import make_backend  # deferred: triton is heavy and optional

    return make_backend, Language


def _driver():
    from triton.runtime import driver  # deferred: triton is heavy and optional

    return driver.active


def _profile_allocator():
    from triton.runtime import _allocation  # deferred: triton is heavy and optional

    return _allocation._profile_allocator


def edited_binary(kernel, stage, edit):
    """(binary, metadata dict) of `kernel` built again from its `stage` text passed through
    `edit(text, metadata dict) -> text` (which may set metadata fields, as a compiler stage does)."""
    text = getattr(kernel, "asm", {}).get(stage)
    if not isinstance(text, str):
        raise NotRestampable(f"the compiled kernel keeps no {stage!r} text (Triton keeps {sorted(kernel.asm)})")
    make_backend, language = _compiler_parts()
    metadata = dict(kernel.metadata._asdict())
    backend = make_backend(kernel.metadata.target)
    stages = {}
    options = backend.parse_options(dict(metadata))
    try:
        backend.add_stages(stages, options, language.TRITON)
    except TypeError:  # a compiler of the Triton before languages (stages, options)
        backend.add_stages(stages, options)
    binary_stage = stages.get(backend.binary_ext)
    if binary_stage is None:
        raise NotRestampable(f"the target's compiler registers no {backend.binary_ext!r} stage")
    edited = edit(text, metadata)
    # ptxas_choice: the ptxas that compiled the kept PTX may be newer than Triton's own.
    return _cached(kernel, backend.binary_ext, edited, lambda: ptxas_choice.build(lambda: binary_stage(edited, metadata))), metadata


def _cached(kernel, binary_ext, edited, build):
    """The binary of `edited` (a stage's text) from Triton's cache, or build() put there: the
    binary stage (ptxas) is the slow part of stamping a kernel, and a later process stamping the
    same kernel the same way finds it. Keyed by the kernel's hash and the edited text."""
    from triton.runtime.cache import get_cache_manager  # deferred: triton is heavy and optional

    key = hashlib.sha256(f"flagtree-restamp:{kernel.hash}:{binary_ext}:{edited}".encode()).hexdigest()
    manager, file_name = get_cache_manager(key), f"{kernel.name}.{binary_ext}"
    path = manager.get_file(file_name)
    if path is not None:
        with open(path, "rb") as f:
            return f.read()
    binary = build()
    try:
        manager.put(binary, file_name, binary=True)
    except OSError:  # a cache that cannot be written to: the next process builds it again
        pass
    return binary


def load_launcher(kernel, binary, metadata):
    """A launcher of `kernel`'s calling convention that runs `binary` (loaded on the current
    device) with `metadata` (the kernel's, as edited), whatever function its callers pass."""
    active = _driver()
    device = active.get_current_device()
    module, function, *_ = active.utils.load_binary(kernel.name, binary, kernel.metadata.shared, device)
    fields = {key: metadata[key] for key in ("profile_scratch_size", "profile_scratch_align") if key in metadata}
    launcher = active.launcher_cls(kernel.src, kernel.metadata._replace(**fields))

    def stamped_launch(grid_x, grid_y, grid_z, stream, _function, *rest):
        return launcher(grid_x, grid_y, grid_z, stream, function, *rest)

    stamped_launch.flagtree_loaded = (module, function, launcher)
    return stamped_launch


def redirect_inductor_launcher(launcher, runner, function=None):
    """An inductor launcher (code generated by ``make_launcher``, calling the ``runner`` (and
    ``function``) its globals captured) calling `runner` (and `function`) instead, with the
    original's attributes (inductor reads ``config``, ``n_regs`` and others from it)."""
    scope = dict(launcher.__globals__)
    scope["runner"] = runner
    if function is not None:
        scope["function"] = function
    redirected = types.FunctionType(launcher.__code__, scope, launcher.__name__, launcher.__defaults__,
                                    launcher.__closure__)
    redirected.__kwdefaults__ = launcher.__kwdefaults__
    redirected.__dict__.update(launcher.__dict__)
    redirected.flagtree_original = launcher
    return redirected


def redirect_to_stamped(launcher, stamped_launch):
    """An inductor launcher of a CompiledKernel calling the launcher of its stamped copy."""
    _, function, runner = stamped_launch.flagtree_loaded
    return redirect_inductor_launcher(launcher, runner, function)


def static_kernel_code(static):
    """A CompiledKernel of the files Triton's cache keeps beside an inductor static kernel's cubin
    (its metadata and every stage's text), to be built again from; NotRestampable where they are gone."""
    from triton.compiler.compiler import CompiledKernel  # deferred: triton is heavy and optional

    name, looked = static.name, []
    for folder in _cache_folders(static):
        try:
            files = [f for f in os.listdir(folder) if f.startswith(name + ".")]
        except OSError:
            files = []
        looked.append(folder)
        if f"{name}.json" in files:
            group = {f: os.path.join(folder, f) for f in sorted(files, key=lambda f: not f.endswith(".json"))}
            return CompiledKernel(None, group, static.hash)
    raise NotRestampable(f"inductor's static launcher keeps no stage text, and no cache folder of its "
                         f"kernel ({', '.join(looked) or 'none'}) holds {name}.json")


def _cache_folders(static):
    """Where a static kernel's stages may lie, most likely first: its cubin's folder (a loaded
    kernel forgets it), then the entry of its hash under TRITON_CACHE_DIR, torch inductor's Triton
    cache (which a process that loaded the kernel from inductor's caches has not put in
    TRITON_CACHE_DIR: inductor sets it only when it builds an autotuner itself) and Triton's own."""
    path = getattr(static, "cubin_path", None)
    folders = [os.path.dirname(path)] if path else []
    key = _cache_key(static.hash)
    for base in (os.environ.get("TRITON_CACHE_DIR"), _inductor_triton_cache(), _triton_cache()):
        if base and os.path.join(base, key) not in folders:
            folders.append(os.path.join(base, key))
    return folders


def _cache_key(kernel_hash):
    """The folder name Triton's file cache gives a hash (base32 since 3.3, the hash before)."""
    try:
        from triton.runtime.cache import _base32  # deferred: triton is heavy and optional
    except ImportError:
        return kernel_hash
    return _base32(kernel_hash)


def _inductor_triton_cache():
    """torch inductor's Triton cache folder of the current device, if inductor's runtime is loaded."""
    module = sys.modules.get("torch._inductor.runtime.cache_dir_utils")
    if module is None or not hasattr(module, "triton_cache_dir"):
        return None
    try:
        device = _driver().get_current_device()
        return module.triton_cache_dir(device if isinstance(device, int) else 0)  # inductor's default: 0
    except Exception:  # a torch whose helper differs: the other folders are still looked in
        return None


def _triton_cache():
    try:
        from triton import knobs  # deferred: triton is heavy and optional

        return knobs.cache.dir
    except (ImportError, AttributeError):
        from triton.runtime.cache import default_cache_dir  # deferred: triton is heavy and optional

        return default_cache_dir()


def static_runner(static, binary, metadata):
    """A runner of an inductor static kernel's calling convention (grid, stream, call arguments)
    that launches `binary` through the static launcher with a profile scratch pointer from
    Triton's profile allocator, for `metadata`'s profile scratch size and alignment."""
    if not getattr(static, "has_profile_scratch", False):
        raise NotRestampable("the static launcher passes the kernel no profile scratch argument")
    active = _driver()
    _, function, *_ = active.utils.load_binary(static.name, binary, static.shared, active.get_current_device())
    extra = (None,) if static.has_global_scratch else ()
    arg_tys = static.arg_tys + "O" * len(extra) + "O"
    launch, allocator = static.C_impl._launch_kernel, _profile_allocator()
    size, align = metadata["profile_scratch_size"], metadata["profile_scratch_align"]
    num_warps, shared = static.num_warps, static.shared

    def stamped_run(grid_x, grid_y, grid_z, stream, *args):
        blocks = grid_x * grid_y * grid_z
        scratch = allocator.get()(blocks * size, align, stream) if blocks > 0 else None
        launch(function, grid_x, grid_y, grid_z, num_warps, shared, arg_tys, (*args, *extra, scratch), stream)

    return stamped_run
