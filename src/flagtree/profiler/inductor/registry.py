"""The fused-op facts of every inductor kernel this process has loaded, by the name a profile
shows: read from inductor's wrapper modules (``PyCodeCache``, which holds both the wrappers it
just compiled and those loaded from its caches) when a profile is written, each wrapper's text
parsed once; never on a launch.

Inductor keeps kernel names unique within one wrapper only: two graphs may each have a
``triton_poi_fused_add_0`` that fuses different operators. A profile's kernel nodes are told apart
by name alone, so such a name's facts are the union of its fusions, in order, with
``fused_variants`` saying how many different ones it had.
"""
import sys

from .codegen_hook import SOURCE_LINES
from .wrapper_text import parse_wrapper

_CODECACHE = "torch._inductor.codecache"
_PARSED = {}  # wrapper file path -> parse_wrapper's result (None: unreadable)


def _wrapper_modules():
    cache = getattr(sys.modules.get(_CODECACHE), "PyCodeCache", None)
    if cache is None:
        return []
    listed = list(getattr(cache, "modules", None) or [])
    listed += list((getattr(cache, "modules_no_attr", None) or {}).values())
    return listed


def _parsed(module):
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        return None
    if path not in _PARSED:
        try:
            with open(path, encoding="utf-8", errors="replace") as source:
                _PARSED[path] = parse_wrapper(source.read())
        except OSError:  # inductor removed it: its kernels stay unknown
            _PARSED[path] = None
    return _PARSED[path]


def _profile_name(module, variable):
    """The name a profile shows for the kernel held in the wrapper's global `variable`: its
    autotuner's ``inductor_meta["kernel_name"]`` (the variable's name otherwise)."""
    meta = getattr(getattr(module, variable, None), "inductor_meta", None)
    name = meta.get("kernel_name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) and name else variable


def kernel_fusions():
    """{kernel name: [facts, ...]}, one distinct facts dict per fusion the name has."""
    found = {}
    for module in _wrapper_modules():
        for variable, entry in (_parsed(module) or {}).items():
            facts = {"fused_aten": entry["fused_aten"], "fused_nodes": entry["fused_nodes"]}
            lines = SOURCE_LINES.get(entry["key"])
            if lines:
                facts["source_lines"] = lines
            variants = found.setdefault(_profile_name(module, variable), [])
            if facts not in variants:
                variants.append(facts)
    return found


def _union(lists):
    merged = []
    for items in lists:
        merged += [item for item in items if item not in merged]
    return merged


def merge_variants(variants):
    """One facts dict for a name with several fusions (see the module's docstring)."""
    if len(variants) == 1:
        return dict(variants[0])
    merged = {key: _union(v.get(key, []) for v in variants) for key in ("fused_aten", "fused_nodes")}
    lines = _union(v.get("source_lines", []) for v in variants)
    if lines:
        merged["source_lines"] = lines
    merged["fused_variants"] = len(variants)
    return merged


def kernel_facts():
    """{kernel name: {"fused_aten", "fused_nodes", ["source_lines"], ["fused_variants"]}} of every
    inductor kernel of the wrappers loaded in this process; {} without inductor."""
    return {name: merge_variants(variants) for name, variants in kernel_fusions().items()}
