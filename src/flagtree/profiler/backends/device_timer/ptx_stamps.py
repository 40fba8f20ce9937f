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

Only the stamping thread reads the timer (the others branch past the stamp at once), and every
stamp is skipped for a null slot pointer, so the same binary launched without our allocator
(pointer 0) runs as if unstamped. Registers live in nested blocks and labels start with
``$ftp_``: no clash with the kernel's own names.
"""
import re

_ENTRY = re.compile(r"\.visible\s+\.entry\s+([A-Za-z_$][\w$]*)\s*\(")
_PARAM = re.compile(r"\.param\s+[^,)]*?([A-Za-z_$][\w$]*)\s*(?:,|$)")
_RET = re.compile(r"^(\s*)ret;\s*$", re.MULTILINE)
_PREDICATED_RET = re.compile(r"@!?%\w+\s+ret;")


class NotStampable(ValueError):
    """The PTX has a shape the stamps do not handle (the kernel then runs untimed)."""


def _lane_address(reg_lane, reg_out, slot, plane_bytes, lanes):
    return (f"\tmov.u32 {reg_lane}, %smid;\n"
            f"\tand.b32 {reg_lane}, {reg_lane}, {lanes - 1};\n"
            f"\tadd.u32 {reg_lane}, {reg_lane}, 1;\n"
            f"\tmul.wide.u32 {reg_out}, {reg_lane}, {plane_bytes};\n"
            f"\tadd.u64 {reg_out}, {slot}, {reg_out};\n")


def entry_block(param, kernel_id, plane_bytes, lanes):
    """Thread 0 of each block only (the others branch past it at once: no timer read for them)."""
    return ("\t{ // flagtree.profiler device_timer: entry stamp\n"
            "\t.reg .pred %ftp_p<2>;\n\t.reg .b32 %ftp_r<8>;\n\t.reg .b64 %ftp_d<3>;\n"
            "\tmov.u32 %ftp_r0, %tid.x;\n"
            "\tsetp.ne.u32 %ftp_p0, %ftp_r0, 0;\n"
            "\t@%ftp_p0 bra $ftp_entry_done;\n"
            f"\tld.param.u64 %ftp_d0, [{param}];\n"
            "\tsetp.eq.u64 %ftp_p0, %ftp_d0, 0;\n"
            "\t@%ftp_p0 bra $ftp_entry_done;\n"
            "\tmov.u64 %ftp_d1, %globaltimer;\n"
            "\tnot.b64 %ftp_d1, %ftp_d1;\n"
            + _lane_address("%ftp_r1", "%ftp_d2", "%ftp_d0", plane_bytes, lanes) +
            "\tred.global.max.u64 [%ftp_d2], %ftp_d1;\n"
            "\tmov.u32 %ftp_r2, %ctaid.x;\n\tmov.u32 %ftp_r3, %ctaid.y;\n\tor.b32 %ftp_r2, %ftp_r2, %ftp_r3;\n"
            "\tmov.u32 %ftp_r3, %ctaid.z;\n\tor.b32 %ftp_r2, %ftp_r2, %ftp_r3;\n"
            "\tsetp.eq.u32 %ftp_p1, %ftp_r2, 0;\n"
            "\tmov.u32 %ftp_r4, %nctaid.x;\n\tmov.u32 %ftp_r5, %nctaid.y;\n\tmov.u32 %ftp_r6, %nctaid.z;\n"
            "\tshl.b32 %ftp_r6, %ftp_r6, 16;\n\tor.b32 %ftp_r5, %ftp_r5, %ftp_r6;\n"
            "\tmov.u32 %ftp_r6, %ntid.x;\n"
            f"\tmov.u32 %ftp_r7, {kernel_id};\n"
            "\t@%ftp_p1 st.global.v4.u32 [%ftp_d0], {%ftp_r7, %ftp_r4, %ftp_r5, %ftp_r6};\n"
            "$ftp_entry_done:\n"
            "\t}\n")


def exit_block(param, plane_bytes, lanes, indent, index):
    """Lane 0 of each warp only; `index` makes the block's label unique in the kernel."""
    done = f"$ftp_exit_done{index}"
    return (f"{indent}{{ // flagtree.profiler device_timer: exit stamp\n"
            "\t.reg .pred %ftp_q0;\n\t.reg .b32 %ftp_s<2>;\n\t.reg .b64 %ftp_e<3>;\n"
            "\tmov.u32 %ftp_s0, %laneid;\n"
            "\tsetp.ne.u32 %ftp_q0, %ftp_s0, 0;\n"
            f"\t@%ftp_q0 bra {done};\n"
            f"\tld.param.u64 %ftp_e0, [{param}];\n"
            "\tsetp.eq.u64 %ftp_q0, %ftp_e0, 0;\n"
            f"\t@%ftp_q0 bra {done};\n"
            + _lane_address("%ftp_s1", "%ftp_e1", "%ftp_e0", plane_bytes, lanes) +
            "\tmov.u64 %ftp_e2, %globaltimer;\n"
            "\tred.global.max.u64 [%ftp_e1+8], %ftp_e2;\n"
            f"{done}:\n"
            "\t}\n")


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


def stamp_ptx(ptx, kernel_id, plane_bytes, lanes):
    """`ptx` with the entry and exit stamps; NotStampable when its shape is not handled."""
    if lanes & (lanes - 1):
        raise ValueError("lanes must be a power of two")
    name, param, start, end = kernel_entry(ptx)
    body = ptx[start + 1:end]
    if _PREDICATED_RET.search(body):
        raise NotStampable("a predicated ret (no place for an exit stamp before it)")
    exits = 0

    def stamp_exit(match):
        nonlocal exits
        exits += 1
        return exit_block(param, plane_bytes, lanes, match.group(1), exits) + match.group(0)

    body = _RET.sub(stamp_exit, body)
    if not exits:
        raise NotStampable("no ret in the kernel body")
    return ptx[:start + 1] + "\n" + entry_block(param, kernel_id, plane_bytes, lanes) + body + ptx[end:]
