"""What each kernel of one torch inductor wrapper module fuses, read from the module's text.

Inductor writes, before each kernel definition ``name = async_compile.triton('name', '''...''')``,
comment lines: ``# kernel path: ...``, ``# Topologically Sorted Source Nodes: [a, b], Original
ATen: [aten.x, aten.y]`` (``Unsorted`` when the nodes come from several graphs), a source node to
ATen node mapping and the graph fragment. The same comments are there whether the wrapper was just
compiled or loaded from inductor's caches. Pure text functions: no torch needed.
"""
import re

_DEFINITION = re.compile(r"^(\w+)\s*=\s*async_compile\.triton\(")
_ORIGINS = re.compile(r"^#\s*(?:Topologically Sorted|Unsorted) Source Nodes:\s*\[(.*?)\],\s*"
                      r"Original ATen:\s*\[(.*?)\]\s*$")
_KERNEL_PATH = "# kernel path:"
_BODY_END = "'''"


def _names(listed):
    """The names of one bracketed comment list (``a, b``), in order, without empty entries."""
    return [name.strip() for name in listed.split(",") if name.strip()]


def comment_key(lines):
    """The key that ties a kernel's comment block to what the codegen hook saw when inductor wrote
    it: its comment lines after the kernel path, each stripped, empty ones left out."""
    return tuple(line.strip() for line in lines
                 if line.strip() and not line.strip().startswith(_KERNEL_PATH))


def _facts(block):
    """(fused_aten, fused_nodes) of one kernel's comment block; None without an origins line."""
    for line in block:
        match = _ORIGINS.match(line.strip())
        if match:
            return _names(match.group(2)), _names(match.group(1))
    return None


def _definitions(text):
    """(variable name, comment lines just above it) for each kernel definition, in order; the
    kernels' own source (between the triple quotes) is skipped, its comments are not the wrapper's."""
    block, in_body = [], False
    for line in text.splitlines():
        if in_body:
            in_body = not line.lstrip().startswith(_BODY_END)
            continue
        match = _DEFINITION.match(line)
        if match:
            yield match.group(1), block
            block, in_body = [], _BODY_END in line[match.end():]
        elif line.startswith("#"):
            block.append(line)
        else:
            block = []


def parse_wrapper(text):
    """{kernel variable name: {"fused_aten": [...], "fused_nodes": [...], "key": comment key}}
    of every Triton kernel the wrapper defines with an origins comment."""
    found = {}
    for name, block in _definitions(text):
        facts = _facts(block)
        if facts is not None:
            found[name] = {"fused_aten": facts[0], "fused_nodes": facts[1], "key": comment_key(block)}
    return found
