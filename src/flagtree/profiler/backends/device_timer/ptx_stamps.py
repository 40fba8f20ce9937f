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
pointer instead (bit 3 set beside the mark) to a graph descriptor (graph_area.h): {per lane an
entry and an exit ticket counter, R replay records laid out as a slot's planes in 16-byte rows}.
The stamps test the tag (an ``and`` and a branch on the ordinary path). Tagged, a block takes its
tickets on lane (its linear index % lanes): the block leader's entry ticket / the lane's blocks,
and the warp's exit ticket / (the lane's blocks x warps), give the replay r; the stamps go to the
lane's row of record r % R, and the warp taking a lane's last exit ticket of a replay zeroes that
row of the next record (graph_tickets.h).

Only the stamping thread reads the timer (the others branch past the stamp at once), and every
stamp is skipped for a pointer without the ring's mark (bit 0: slots and descriptors are
16-aligned, so the ring sets it on every pointer it hands out): the same binary launched without
our allocator (pointer 0), or given scratch by another tool's profile allocator, runs as if
unstamped and writes nothing. Registers live in nested blocks and labels start with
``$ftp_``: no clash with the kernel's own names.
"""
import re

_ENTRY = re.compile(r"\.visible\s+\.entry\s+([A-Za-z_$][\w$]*)\s*\(")
_PARAM = re.compile(r"\.param\s+[^,)]*?([A-Za-z_$][\w$]*)\s*(?:,|$)")
_RET = re.compile(r"^(\s*)ret;\s*$", re.MULTILINE)
_PREDICATED_RET = re.compile(r"@!?%\w+\s+ret;")

# The native ring's layout (timer_ring.h, graph_area.h).
SLOT_BYTES = 16
SLOT_MARK = 1
GRAPH_TAG = 8
TICKET_BYTES = 16  # a descriptor's header: per lane {u64 entry tickets, u64 exit tickets} (graph_tickets.h)


class NotStampable(ValueError):
    """The PTX has a shape the stamps do not handle (the kernel then runs untimed)."""


def _lane_address(reg_lane, reg_out, slot, stride, lanes):
    return (f"\tmov.u32 {reg_lane}, %smid;\n"
            f"\tand.b32 {reg_lane}, {reg_lane}, {lanes - 1};\n"
            f"\tadd.u32 {reg_lane}, {reg_lane}, 1;\n"
            f"\tmul.wide.u32 {reg_out}, {reg_lane}, {stride};\n"
            f"\tadd.u64 {reg_out}, {slot}, {reg_out};\n")


def _meta_store(address, kernel_id):
    """Block (0,0,0) stores {kernel id, grid x, grid y | grid z << 16, block x} at `address`."""
    return ("\tmov.u32 %ftp_r2, %ctaid.x;\n\tmov.u32 %ftp_r3, %ctaid.y;\n\tor.b32 %ftp_r2, %ftp_r2, %ftp_r3;\n"
            "\tmov.u32 %ftp_r3, %ctaid.z;\n\tor.b32 %ftp_r2, %ftp_r2, %ftp_r3;\n"
            "\tsetp.eq.u32 %ftp_p1, %ftp_r2, 0;\n"
            "\tmov.u32 %ftp_r4, %nctaid.x;\n\tmov.u32 %ftp_r5, %nctaid.y;\n\tmov.u32 %ftp_r6, %nctaid.z;\n"
            "\tshl.b32 %ftp_r6, %ftp_r6, 16;\n\tor.b32 %ftp_r5, %ftp_r5, %ftp_r6;\n"
            "\tmov.u32 %ftp_r6, %ntid.x;\n"
            f"\tmov.u32 %ftp_r7, {kernel_id};\n"
            f"\t@%ftp_p1 st.global.v4.u32 [{address}], {{%ftp_r7, %ftp_r4, %ftp_r5, %ftp_r6}};\n")


def _graph_record(out, replay, descriptor, records, lanes):
    """`out` (not `descriptor`) = the record of replay `replay` (modulo `records`): a ring slot's
    planes (plane 0, then the lanes) as contiguous rows, after the lanes' tickets."""
    return (f"\tand.b64 {out}, {replay}, {records - 1};\n"
            f"\tmul.lo.u64 {out}, {out}, {(1 + lanes) * SLOT_BYTES};\n"
            f"\tadd.u64 {out}, {out}, {descriptor};\n"
            f"\tadd.u64 {out}, {out}, {lanes * TICKET_BYTES};\n")


def _ticket_lane(lane, count, u, w, lanes):
    """The block's ticket lane `lane` (its linear index in the grid, modulo `lanes`) and `count` =
    the blocks of the grid on that lane, (blocks - 1 - lane) / lanes + 1; `u` three u32 and `w`
    one u64 scratch registers. Spreading the tickets keeps a many-block kernel's atomics off one
    address (graph_tickets.h)."""
    a, b, c = u
    return (f"\tmov.u32 {a}, %nctaid.y;\n\tmov.u32 {b}, %ctaid.z;\n\tmul.wide.u32 {lane}, {a}, {b};\n"
            f"\tmov.u32 {b}, %ctaid.y;\n\tcvt.u64.u32 {w}, {b};\n\tadd.u64 {lane}, {lane}, {w};\n"
            f"\tmov.u32 {c}, %nctaid.x;\n\tcvt.u64.u32 {w}, {c};\n\tmul.lo.u64 {lane}, {lane}, {w};\n"
            f"\tmov.u32 {b}, %ctaid.x;\n\tcvt.u64.u32 {w}, {b};\n\tadd.u64 {lane}, {lane}, {w};\n"
            f"\tand.b64 {lane}, {lane}, {lanes - 1};\n"
            f"\tmul.wide.u32 {count}, {c}, {a};\n\tmov.u32 {b}, %nctaid.z;\n\tcvt.u64.u32 {w}, {b};\n"
            f"\tmul.lo.u64 {count}, {count}, {w};\n"
            f"\tsub.u64 {count}, {count}, {lane};\n\tsub.u64 {count}, {count}, 1;\n"
            f"\tshr.u64 {count}, {count}, {_log2(lanes)};\n\tadd.u64 {count}, {count}, 1;\n")


def _lane_row(out, lane, base):
    """`out` = the address of lane `lane`'s row in the slot-shaped record at `base`."""
    return (f"\tadd.u64 {out}, {lane}, 1;\n\tshl.b64 {out}, {out}, {_log2(SLOT_BYTES)};\n"
            f"\tadd.u64 {out}, {out}, {base};\n")


def _lane_tickets(out, lane, descriptor):
    """`out` = the address of lane `lane`'s ticket counters in the descriptor's header."""
    return (f"\tshl.b64 {out}, {lane}, {_log2(TICKET_BYTES)};\n"
            f"\tadd.u64 {out}, {out}, {descriptor};\n")


def _log2(power_of_two):
    return power_of_two.bit_length() - 1


def entry_block(param, kernel_id, plane_bytes, lanes, records):
    """Thread 0 of each block only (the others branch past it at once: no timer read for them).
    A tagged pointer (bit 3) is a graph descriptor: the block's entry ticket picks the record."""
    return ("\t{ // flagtree.profiler device_timer: entry stamp\n"
            "\t.reg .pred %ftp_p<2>;\n\t.reg .b32 %ftp_r<8>;\n\t.reg .b64 %ftp_d<7>;\n"
            "\tmov.u32 %ftp_r0, %tid.x;\n"
            "\tsetp.ne.u32 %ftp_p0, %ftp_r0, 0;\n"
            "\t@%ftp_p0 bra $ftp_entry_done;\n"
            f"\tld.param.u64 %ftp_d0, [{param}];\n"
            f"\tand.b64 %ftp_d2, %ftp_d0, {SLOT_MARK};\n"
            "\tsetp.eq.u64 %ftp_p0, %ftp_d2, 0;\n"
            "\t@%ftp_p0 bra $ftp_entry_done;\n"
            "\tmov.u64 %ftp_d1, %globaltimer;\n"
            "\tnot.b64 %ftp_d1, %ftp_d1;\n"
            f"\tand.b64 %ftp_d2, %ftp_d0, {GRAPH_TAG};\n"
            "\tsetp.eq.u64 %ftp_p0, %ftp_d2, 0;\n"
            "\t@%ftp_p0 bra $ftp_entry_slot;\n"
            # a graph replay: the ticket on the block's lane / the lane's blocks = the replay's index
            "\tand.b64 %ftp_d0, %ftp_d0, -16;\n"
            + _ticket_lane("%ftp_d5", "%ftp_d4", ("%ftp_r4", "%ftp_r5", "%ftp_r6"), "%ftp_d3", lanes) +
            _lane_tickets("%ftp_d6", "%ftp_d5", "%ftp_d0") +
            "\tatom.global.add.u64 %ftp_d3, [%ftp_d6], 1;\n"
            "\tdiv.u64 %ftp_d3, %ftp_d3, %ftp_d4;\n"
            + _graph_record("%ftp_d3", "%ftp_d3", "%ftp_d0", records, lanes)
            + _lane_row("%ftp_d2", "%ftp_d5", "%ftp_d3") +
            "\tred.global.max.u64 [%ftp_d2], %ftp_d1;\n"
            + _meta_store("%ftp_d3", kernel_id) +
            "\tbra.uni $ftp_entry_done;\n"
            "$ftp_entry_slot:\n"
            f"\tand.b64 %ftp_d0, %ftp_d0, {-1 - SLOT_MARK};\n"
            + _lane_address("%ftp_r1", "%ftp_d2", "%ftp_d0", plane_bytes, lanes) +
            "\tred.global.max.u64 [%ftp_d2], %ftp_d1;\n"
            + _meta_store("%ftp_d0", kernel_id) +
            "$ftp_entry_done:\n"
            "\t}\n")


def _graph_exit(records, lanes, done):
    """Lane 0 of a warp of a graph replay, %ftp_e0 the tagged pointer and %ftp_e2 the time: the
    exit ticket on the block's lane / (the lane's blocks x warps per block) is the replay's index;
    the warp taking the lane's last ticket of the replay zeroes the lane's row of the next
    replay's record (lane 0's also its first row, the kernel's id and geometry)."""
    return ("\tand.b64 %ftp_e0, %ftp_e0, -16;\n"
            + _ticket_lane("%ftp_e5", "%ftp_e4", ("%ftp_s1", "%ftp_s2", "%ftp_s3"), "%ftp_e3", lanes) +
            "\tmov.u32 %ftp_s1, %ntid.x;\n\tmov.u32 %ftp_s2, %ntid.y;\n\tmul.lo.u32 %ftp_s1, %ftp_s1, %ftp_s2;\n"
            "\tmov.u32 %ftp_s2, %ntid.z;\n\tmul.lo.u32 %ftp_s1, %ftp_s1, %ftp_s2;\n"
            "\tadd.u32 %ftp_s1, %ftp_s1, 31;\n\tshr.u32 %ftp_s1, %ftp_s1, 5;\n"
            "\tcvt.u64.u32 %ftp_e3, %ftp_s1;\n\tmul.lo.u64 %ftp_e4, %ftp_e4, %ftp_e3;\n"
            + _lane_tickets("%ftp_e6", "%ftp_e5", "%ftp_e0") +
            "\tatom.global.add.u64 %ftp_e3, [%ftp_e6+8], 1;\n"
            "\tdiv.u64 %ftp_e7, %ftp_e3, %ftp_e4;\n"
            "\tadd.u64 %ftp_e8, %ftp_e7, 1;\n\tmul.lo.u64 %ftp_e9, %ftp_e8, %ftp_e4;\n"
            "\tadd.u64 %ftp_e3, %ftp_e3, 1;\n\tsetp.eq.u64 %ftp_q1, %ftp_e3, %ftp_e9;\n"
            + _graph_record("%ftp_e7", "%ftp_e7", "%ftp_e0", records, lanes)
            + _lane_row("%ftp_e1", "%ftp_e5", "%ftp_e7") +
            "\tred.global.max.u64 [%ftp_e1+8], %ftp_e2;\n"
            f"\t@!%ftp_q1 bra {done};\n"
            + _graph_record("%ftp_e8", "%ftp_e8", "%ftp_e0", records, lanes)
            + _lane_row("%ftp_e1", "%ftp_e5", "%ftp_e8") +
            "\tmov.u64 %ftp_e9, 0;\n"
            "\tst.global.v2.u64 [%ftp_e1], {%ftp_e9, %ftp_e9};\n"
            "\tsetp.ne.u64 %ftp_q1, %ftp_e5, 0;\n"
            f"\t@%ftp_q1 bra {done};\n"
            "\tst.global.v2.u64 [%ftp_e8], {%ftp_e9, %ftp_e9};\n"
            f"\tbra.uni {done};\n")


def exit_block(param, plane_bytes, lanes, records, indent, index):
    """Lane 0 of each warp only; `index` makes the block's labels unique in the kernel."""
    done, slot = f"$ftp_exit_done{index}", f"$ftp_exit_slot{index}"
    return (f"{indent}{{ // flagtree.profiler device_timer: exit stamp\n"
            "\t.reg .pred %ftp_q<2>;\n\t.reg .b32 %ftp_s<4>;\n\t.reg .b64 %ftp_e<10>;\n"
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
            "\tmov.u64 %ftp_e2, %globaltimer;\n"
            + _graph_exit(records, lanes, done) +
            f"{slot}:\n"
            f"\tand.b64 %ftp_e0, %ftp_e0, {-1 - SLOT_MARK};\n"
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


def stamp_ptx(ptx, kernel_id, plane_bytes, lanes, records):
    """`ptx` with the entry and exit stamps; NotStampable when its shape is not handled.
    `records`: replay records per graph descriptor (a power of two)."""
    if lanes & (lanes - 1) or records < 2 or records & (records - 1):
        raise ValueError("lanes and records must be powers of two (records >= 2)")
    name, param, start, end = kernel_entry(ptx)
    body = ptx[start + 1:end]
    if _PREDICATED_RET.search(body):
        raise NotStampable("a predicated ret (no place for an exit stamp before it)")
    exits = 0

    def stamp_exit(match):
        nonlocal exits
        exits += 1
        return exit_block(param, plane_bytes, lanes, records, match.group(1), exits) + match.group(0)

    body = _RET.sub(stamp_exit, body)
    if not exits:
        raise NotStampable("no ret in the kernel body")
    return ptx[:start + 1] + "\n" + entry_block(param, kernel_id, plane_bytes, lanes, records) + body + ptx[end:]
