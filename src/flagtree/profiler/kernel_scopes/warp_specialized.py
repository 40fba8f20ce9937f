"""Scopes inside a Triton-language warp-specialized loop (``tl.range(..., warp_specialize=True)``).

Triton's partitioner (NVGPUWarpSpecialization, checked on Triton 3.6 and 3.9, sm_90) gives every
op of such a loop to one or more partitions (``async_task_id``) and drops the ops it gives to none:
``proton.record`` is one of them, so a scope entered and left inside the loop body left no record
and the kernel node no device-scope child. Tagging the records with partitions ourselves is not
an option: any op that arrives with an ``async_task_id`` makes the pass treat the kernel as
partitioned by hand and skip warp specialization, which would change the kernel measured.

So, on the TTIR that enters the TritonGPU passes, each record inside a warp-specialized loop moves
out of it: its start records just before the loop, its end records just after, in their order.
The scope is then recorded once per warp and launch, around the loop; the partitioner places
both records in front of the specialized region (as it does for a scope written around the loop),
so the scope is there but times almost nothing. Gluon's ``gl.warp_specialize`` partitions keep
their scopes inside and time them (docs/reference/instrumentation.md).
"""
import os
import re
import tempfile

from ..triton_glue.compiler_points import libtriton

_FOR = re.compile(r"^(\s*)(?:%[^=]+= )?scf\.for\b.*\{\s*$")
_RECORD = re.compile(r"^\s*proton\.record (start|end) ")
_WARP_SPECIALIZE = re.compile(r"\btt\.warp_specialize\b")


def hoist_records(text):
    """The module text with the records inside each warp-specialized ``scf.for`` moved out of it
    (starts before the loop, ends after), or None when no such loop holds a record."""
    out = []
    loops = []  # (indentation, index of the loop's first line in `out`) of the open scf.for ops
    moved = False
    for line in text.split("\n"):
        if loops and line.startswith(loops[-1][0] + "}"):  # the innermost open loop closes here
            indent, first = loops.pop()
            if _WARP_SPECIALIZE.search(line):
                body = out[first + 1:]
                starts = [indent + r.lstrip() for r in body if _starts(r)]
                ends = [indent + r.lstrip() for r in body if _ends(r)]
                if starts or ends:
                    moved = True
                    kept = [r for r in body if not _RECORD.match(r)]
                    out[first:] = starts + [out[first]] + kept
                    out.append(line)
                    out.extend(ends)
                    continue
            out.append(line)
            continue
        opened = _FOR.match(line)
        if opened:
            loops.append((opened.group(1), len(out)))
        out.append(line)
    return "\n".join(out) if moved else None


def _starts(line):
    found = _RECORD.match(line)
    return found is not None and found.group(1) == "start"


def _ends(line):
    found = _RECORD.match(line)
    return found is not None and found.group(1) == "end"


def hoisted_module(module):
    """`module` (TTIR) itself, or a module parsed from its text with hoist_records applied."""
    text = str(module)
    if "tt.warp_specialize" not in text or "proton.record" not in text:
        return module
    hoisted = hoist_records(text)
    if hoisted is None:
        return module
    ir = libtriton("ir")
    context = module.context
    handle, path = tempfile.mkstemp(suffix=".ttir")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(hoisted)
        parsed = ir.parse_mlir_module(path, context)
    finally:
        os.unlink(path)
    parsed.context = context  # as Triton's own parse() sets it: the later stages read it
    return parsed
