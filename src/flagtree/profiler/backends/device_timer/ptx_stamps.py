"""The stamps a device-timed kernel carries, inserted into its PTX (text in, text out).

Every Triton kernel has a last parameter for profile scratch memory (Triton's launcher passes
what the profile allocator returned; 0 when the kernel asks for none). A stamped kernel asks for
16 bytes with a tag alignment, so the launcher calls our allocator, which returns the address of
the launch's ring slot (plane 0); the stamps find the slot's lanes at fixed plane offsets:

* at entry, thread 0 of every block: atomic max of ~%globaltimer into lane (SM id % lanes) word 0
  (max of the complement = the earliest start; a zero slot needs no initialisation), and block
  (0,0,0) stores {kernel id, grid x, grid y | grid z << 16, block x} into plane 0;
* before every ``ret``, lane 0 of every warp: atomic max of %globaltimer into its lane's word 1
  (per warp, not per block: no barrier is inserted, so early-exiting warps cannot deadlock).

A launch captured into a CUDA graph keeps its pointer for every replay, so it gets a tagged
pointer instead (bit 3 set beside the mark) to a graph descriptor; the stamps test the tag (an
``and`` and a branch on the ordinary path) and, tagged, take the graph path (ptx_graph_stamps.py).

Only the stamping thread reads the timer (the others branch past the stamp at once), and every
stamp is skipped for a pointer without the ring's mark (bit 0: slots and descriptors are
16-aligned, so the ring sets it on every pointer it hands out): the same binary launched without
our allocator (pointer 0), or given scratch by another tool's profile allocator, runs as if
unstamped and writes nothing. Registers live in nested blocks (but for the two the graph path
carries from entry to exit, declared at the kernel's scope) and registers and labels start with
``%ftp_`` / ``$ftp_``: no clash with the kernel's own names.
"""
import re

from .ptx_graph_stamps import graph_entry, graph_exit
from .ptx_text import CARRIED, GRAPH_TAG, SLOT_MARK, meta_store

_ENTRY = re.compile(r"\.visible\s+\.entry\s+([A-Za-z_$][\w$]*)\s*\(")
_PARAM = re.compile(r"\.param\s+[^,)]*?([A-Za-z_$][\w$]*)\s*(?:,|$)")
_RET = re.compile(r"^(\s*)ret;\s*$", re.MULTILINE)
_PREDICATED_RET = re.compile(r"@!?%\w+\s+ret;")
_REQNTID = re.compile(r"\.reqntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")


class NotStampable(ValueError):
    """The PTX has a shape the stamps do not handle (the kernel then runs untimed)."""


def _lane_address(reg_lane, reg_out, slot, stride, lanes):
    return (f"\tmov.u32 {reg_lane}, %smid;\n"
            f"\tand.b32 {reg_lane}, {reg_lane}, {lanes - 1};\n"
            f"\tadd.u32 {reg_lane}, {reg_lane}, 1;\n"
            f"\tmul.wide.u32 {reg_out}, {reg_lane}, {stride};\n"
            f"\tadd.u64 {reg_out}, {slot}, {reg_out};\n")


def entry_block(param, kernel_id, plane_bytes, lanes, threads=None):
    """Lane 0 of each warp only (the others branch past it at once). On a ring slot, thread 0
    stamps its lane and block (0,0,0) the kernel's id and geometry; on a tagged pointer (bit 3, a
    graph descriptor) every warp takes its entry ticket and thread 0 reads the timer, both kept
    for the exit stamp: nothing here waits for memory."""
    return (f"\t.reg .b64 {CARRIED}<2>;\n"
            "\t{ // flagtree.profiler device_timer: entry stamp\n"
            "\t.reg .pred %ftp_p<3>;\n\t.reg .b32 %ftp_r<8>;\n\t.reg .b64 %ftp_d<7>;\n"
            "\tmov.u32 %ftp_r0, %laneid;\n"
            "\tsetp.ne.u32 %ftp_p0, %ftp_r0, 0;\n"
            "\t@%ftp_p0 bra $ftp_entry_done;\n"
            f"\tld.param.u64 %ftp_d0, [{param}];\n"
            f"\tand.b64 %ftp_d2, %ftp_d0, {SLOT_MARK};\n"
            "\tsetp.eq.u64 %ftp_p0, %ftp_d2, 0;\n"
            "\t@%ftp_p0 bra $ftp_entry_done;\n"
            "\tmov.u32 %ftp_r0, %tid.x;\n"
            "\tsetp.eq.u32 %ftp_p2, %ftp_r0, 0;\n"
            f"\tand.b64 %ftp_d2, %ftp_d0, {GRAPH_TAG};\n"
            "\tsetp.eq.u64 %ftp_p0, %ftp_d2, 0;\n"
            "\t@%ftp_p0 bra $ftp_entry_slot;\n"
            + graph_entry("%ftp_p2", "$ftp_entry_done", threads) +
            "$ftp_entry_slot:\n"
            "\t@!%ftp_p2 bra $ftp_entry_done;\n"
            "\tmov.u64 %ftp_d1, %globaltimer;\n"
            "\tnot.b64 %ftp_d1, %ftp_d1;\n"
            f"\tand.b64 %ftp_d0, %ftp_d0, {-1 - SLOT_MARK};\n"
            + _lane_address("%ftp_r1", "%ftp_d2", "%ftp_d0", plane_bytes, lanes) +
            "\tred.global.max.u64 [%ftp_d2], %ftp_d1;\n"
            + meta_store("%ftp_d0", kernel_id, r="%ftp_r", p="%ftp_p1") +
            "$ftp_entry_done:\n"
            "\t}\n")


def exit_block(param, kernel_id, plane_bytes, lanes, records, indent, index, threads=None):
    """Lane 0 of each warp only; `index` makes the block's labels unique in the kernel; `threads`
    the 1-D block size the kernel fixes, if it does (one_dimensional_block)."""
    done, slot = f"$ftp_exit_done{index}", f"$ftp_exit_slot{index}"
    return (f"{indent}{{ // flagtree.profiler device_timer: exit stamp\n"
            "\t.reg .pred %ftp_q<2>;\n\t.reg .b32 %ftp_s<8>;\n\t.reg .b32 %ftp_m<8>;\n\t.reg .b64 %ftp_e<10>;\n"
            "\tmov.u32 %ftp_s0, %laneid;\n"
            "\tsetp.ne.u32 %ftp_q0, %ftp_s0, 0;\n"
            f"\t@%ftp_q0 bra {done};\n"
            f"\tld.param.u64 %ftp_e0, [{param}];\n"
            f"\tand.b64 %ftp_e3, %ftp_e0, {SLOT_MARK};\n"
            "\tsetp.eq.u64 %ftp_q0, %ftp_e3, 0;\n"
            f"\t@%ftp_q0 bra {done};\n"
            f"\tand.b64 %ftp_e3, %ftp_e0, {GRAPH_TAG};\n"
            "\tsetp.eq.u64 %ftp_q0, %ftp_e3, 0;\n"
            f"\t@%ftp_q0 bra {slot};\n"
            + graph_exit(kernel_id, records, lanes, done, index, threads) +
            f"{slot}:\n"
            f"\tand.b64 %ftp_e0, %ftp_e0, {-1 - SLOT_MARK};\n"
            + _lane_address("%ftp_s1", "%ftp_e1", "%ftp_e0", plane_bytes, lanes) +
            "\tmov.u64 %ftp_e2, %globaltimer;\n"
            "\tred.global.max.u64 [%ftp_e1+8], %ftp_e2;\n"
            f"{done}:\n"
            "\t}\n")


def one_dimensional_block(header):
    """The block size a kernel's header (its text between the parameters and the body) fixes
    with ``.reqntid x`` (or ``x, 1, 1``), else None."""
    match = _REQNTID.search(header)
    if not match or any(dim not in (None, "1") for dim in match.group(2, 3)):
        return None
    return int(match.group(1))


def _matching_brace(text, open_at):
    depth = 0
    for i in range(open_at, len(text)):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
    raise NotStampable("unbalanced braces in the kernel body")


def kernel_entry(ptx):
    """(name, last parameter's name, body start, body end) of the one .entry in `ptx`."""
    entries = list(_ENTRY.finditer(ptx))
    if len(entries) != 1:
        raise NotStampable(f"expected one .entry, found {len(entries)}")
    entry = entries[0]
    close = ptx.index(")", entry.end())
    params = [m.group(1) for m in _PARAM.finditer(ptx[entry.end():close].replace("\n", " \n"))]
    if not params:
        raise NotStampable("the kernel has no parameters (no profile scratch pointer)")
    body = ptx.index("{", close)
    return entry.group(1), params[-1], body, _matching_brace(ptx, body)


def stamp_ptx(ptx, kernel_id, plane_bytes, lanes, records):
    """`ptx` with the entry and exit stamps; NotStampable when its shape is not handled.
    `records`: replay records per graph descriptor (a power of two)."""
    if lanes & (lanes - 1) or records < 2 or records & (records - 1):
        raise ValueError("lanes and records must be powers of two (records >= 2)")
    name, param, start, end = kernel_entry(ptx)
    threads = one_dimensional_block(ptx[ptx.index(")", ptx.index(name)):start])
    body = ptx[start + 1:end]
    if _PREDICATED_RET.search(body):
        raise NotStampable("a predicated ret (no place for an exit stamp before it)")
    exits = 0

    def stamp_exit(match):
        nonlocal exits
        exits += 1
        return exit_block(param, kernel_id, plane_bytes, lanes, records, match.group(1), exits, threads) + match.group(0)

    body = _RET.sub(stamp_exit, body)
    if not exits:
        raise NotStampable("no ret in the kernel body")
    return ptx[:start + 1] + "\n" + entry_block(param, kernel_id, plane_bytes, lanes, threads) + body + ptx[end:]
