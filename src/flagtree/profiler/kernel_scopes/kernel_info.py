"""What the host needs to read an instrumented kernel's buffer: its block layout and scope names."""
import dataclasses
import os
import re
import tempfile

from ..triton_glue.compiler_points import libtriton
from .layout import CLOCK_BITS_LONG, CLOCK_BITS_SHORT, BlockLayout, header_words_from_ptx

_RECORD = re.compile(r'proton\.record\s+(start|end)\s+"([^"]*)"')


@dataclasses.dataclass(frozen=True)
class KernelInfo:
    name: str
    layout: BlockLayout
    scope_names: dict  # scope id -> name
    scope_parents: dict  # scope id -> parent scope id (absent: top level)

    def scope_path(self, scope_id):
        """Names from the outermost enclosing scope down to scope_id."""
        path, seen = [], set()
        while scope_id is not None and scope_id not in seen:
            seen.add(scope_id)
            path.append(self.scope_names.get(scope_id, f"<scope {scope_id}>"))
            scope_id = self.scope_parents.get(scope_id)
        return path[::-1]


def scopes_from_ttgir(ttgir):
    """({id: name}, {id: parent id}) with Triton's own numbering (proton.get_scope_id_names on the
    parsed module); falls back to first-appearance order of the records in the text."""
    try:
        return _scopes_from_module(ttgir)
    except Exception:
        names = []
        for _, name in _RECORD.findall(ttgir):
            if name not in names:
                names.append(name)
        return dict(enumerate(names)), {}


def _scopes_from_module(ttgir):
    ir, nvidia, proton = (libtriton(name) for name in ("ir", "nvidia", "proton"))

    context = ir.context()
    ir.load_dialects(context)
    nvidia.load_dialects(context)
    proton.load_dialects(context)
    with tempfile.NamedTemporaryFile("w", suffix=".ttgir", delete=False) as handle:
        handle.write(ttgir)
        path = handle.name
    try:
        module = ir.parse_mlir_module(path, context)
        module.context = context
        names = {int(i): str(n) for i, n in proton.get_scope_id_names(module)}
        parents = {int(i): int(p) for i, p in proton.get_scope_id_parents(module) if int(p) >= 0}
    finally:
        os.unlink(path)
    return names, parents


def kernel_info(name, metadata, asm, options):
    """KernelInfo from a compiled kernel's metadata (object or dict) and asm dict; None when the
    kernel was not instrumented (no profile scratch)."""
    get = metadata.get if isinstance(metadata, dict) else (lambda key, default=None: getattr(metadata, key, default))
    stride = int(get("profile_scratch_size", 0) or 0)
    if stride <= 0:
        return None
    num_warps = int(get("num_warps", 4))
    layout = BlockLayout(stride=stride, num_warps=num_warps, header_words=header_words_from_ptx(asm.get("ptx", "")),
                         granularity=options.granularity,
                         clock_bits=CLOCK_BITS_LONG if options.clock == 64 else CLOCK_BITS_SHORT)
    names, parents = scopes_from_ttgir(asm.get("ttgir", ""))
    return KernelInfo(name=name, layout=layout, scope_names=names, scope_parents=parents)
